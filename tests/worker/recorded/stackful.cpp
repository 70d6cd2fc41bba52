// Records stackful_test.cpp's histories, driving the engine by hand.
#include "tests/worker/recorded/stackful.hpp"

#include "reprise/codec.hpp"
#include "tests/worker/record_groups.hpp"
#include "tests/worker/recording.hpp"

namespace reprise::recorded {
namespace {

using namespace stackful;

const std::string kStackfulQueue = "stackful";

// Starts `def` as `id` with `args` and runs its first task.
template <auto Fn, typename... Args>
void start_stackful(Recording& r, const WorkflowDef<Fn>& def, const std::string& id, const Args&... args) {
  r.start(def, id, kStackfulQueue, args...);
  r.workflow_task(kStackfulQueue);
}

}  // namespace

void record_stackful(const std::filesystem::path& dir) {
  {
    // A charge, the hour's timer, a second charge.
    Recording r(dir);
    start_stackful(r, deep_wf, "deep", std::string("o"));
    r.complete(r.activity_tasks(kStackfulQueue, 1).at("1"), to_payload(std::string("c1")));
    r.workflow_task(kStackfulQueue);
    r.fire_timers("deep", 1h);
    r.workflow_task(kStackfulQueue);
    r.complete(r.activity_tasks(kStackfulQueue, 1).at("2"), to_payload(std::string("c2")));
    require(completes(r.workflow_task(kStackfulQueue)), "deep completes");
    r.save("deep", "stackful_deep");
  }
  {
    // "peer" runs and is not notify's child.
    Recording r(dir);
    r.start_bystander("peer");
    start_stackful(r, notify_wf, "notify", std::string("peer"));
    r.workflow_task(kStackfulQueue);  // after the signal's outcome: asks for the cancel
    require(completes(r.workflow_task(kStackfulQueue)), "notify completes");
    r.save("notify", "stackful_notify");
  }
  {
    Recording r(dir);
    start_stackful(r, explained_wf, "explained", std::string("o"));
    r.fail(r.activity_tasks(kStackfulQueue, 1).at("1"), "card declined", "CardDeclined");
    require(r.workflow_task(kStackfulQueue).back().has_fail_workflow_execution(), "explained fails");
    r.save("explained", "stackful_explained");
  }
  {
    // The second task throws: the task fails, as with the default policy.
    Recording r(dir);
    start_stackful(r, buggy_wf, "buggy");
    r.fire_timers("buggy", 1s);
    r.failing_workflow_task(kStackfulQueue);
    r.save("buggy", "stackful_buggy");
  }
  {
    // Canceled while the charge runs: it is asked to cancel and reports so;
    // the refund completes.
    Recording r(dir);
    start_stackful(r, cleanup_wf, "checkout", std::string("order-1"));
    const auto charge = r.activity_tasks(kStackfulQueue, 1).at("1");
    r.client().handle(cleanup_wf, "checkout").cancel();
    r.workflow_task(kStackfulQueue);
    r.canceled(charge);
    r.complete(r.activity_tasks(kStackfulQueue, 1).at("2"), to_payload(std::string("refunded")));
    require(r.workflow_task(kStackfulQueue).back().has_cancel_workflow_execution(), "checkout ends canceled");
    r.save("checkout", "stackful_cleanup");
  }
  {
    // b's charge completes first, so b schedules its refund first; the
    // refunds complete in the order they were scheduled.
    Recording r(dir);
    start_stackful(r, branches_wf, "branches");
    auto charges = r.activity_tasks(kStackfulQueue, 2);
    r.complete(charges.at("2"), to_payload(std::string("b")));
    r.complete(charges.at("1"), to_payload(std::string("a")));
    r.workflow_task(kStackfulQueue);
    auto refunds = r.activity_tasks(kStackfulQueue, 2);
    for (const std::string id : {"3", "4"}) {
      const std::string order = from_payload<std::string>(refunds.at(id).input().payloads(0), "order");
      r.complete(refunds.at(id), to_payload("r" + order));
    }
    require(completes(r.workflow_task(kStackfulQueue)), "branches completes");
    r.save("branches", "stackful_branches");
  }
  {
    // The minute passes before the charge is taken by any worker.
    Recording r(dir);
    start_stackful(r, race_wf, "race", std::string("o"));
    r.fire_timers("race", 1min);
    require(completes(r.workflow_task(kStackfulQueue)), "race completes");
    r.save("race", "stackful_race");
  }
}

}  // namespace reprise::recorded
