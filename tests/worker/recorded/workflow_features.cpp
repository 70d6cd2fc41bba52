// Records workflow_features_test.cpp's histories, driving the engine by hand.
#include "tests/worker/recorded/workflow_features.hpp"

#include <future>
#include <thread>

#include "reprise/codec.hpp"
#include "tests/worker/record_groups.hpp"
#include "tests/worker/recording.hpp"

namespace reprise::recorded {
namespace {

using namespace features;

const std::string kFeaturesQueue = "features";

// Starts `def` as `id` with `args` and runs its first task.
template <auto Fn, typename... Args>
void start_feature(Recording& r, const WorkflowDef<Fn>& def, const std::string& id, const Args&... args) {
  r.start(def, id, kFeaturesQueue, args...);
  r.workflow_task(kFeaturesQueue);
}

// How the go-ahead child of `parent` is made to end.
enum class ChildEnd { kCanceled, kTerminated, kTimedOut };

// Starts the go-ahead parent as `parent`, lets its child start and wait,
// ends the child as `end` says and answers tasks until the parent closes.
void record_go_ahead_child(Recording& r, const std::string& parent, ChildEnd end) {
  r.can_run(go_ahead_child_wf);
  start_feature(r, go_ahead_parent_wf, parent);
  r.workflow_task(kFeaturesQueue);  // the child's first task, or the parent's once the child started,
  r.workflow_task(kFeaturesQueue);  // in either order
  std::string child;
  const v1::History h = fetch_history(r.connection(), parent);
  for (const v1::HistoryEvent& e : h.events()) {
    if (e.has_child_workflow_execution_started())
      child = e.child_workflow_execution_started().workflow_execution().workflow_id();
  }
  require(!child.empty(), parent + ": the child started");
  auto handle = r.client().handle(go_ahead_child_wf, child);
  switch (end) {
    case ChildEnd::kCanceled:
      handle.cancel("no longer needed");
      break;
    case ChildEnd::kTerminated:
      handle.terminate("no longer needed");
      break;
    case ChildEnd::kTimedOut:
      r.env().advance(1h);  // the child's run timeout
      break;
  }
  r.workflow_tasks_until_closed(kFeaturesQueue, parent);
}

// The number of workflow tasks started before the first event `has`.
template <typename Has>
int tasks_before(const v1::History& h, Has has) {
  int started = 0;
  for (const v1::HistoryEvent& e : h.events()) {
    if (has(e)) return started;
    started += e.has_workflow_task_started() ? 1 : 0;
  }
  throw std::runtime_error("no such event");
}

}  // namespace

void record_workflow_features(const std::filesystem::path& dir) {
  {
    // Canceled while the charge runs: it is asked to cancel and reports so;
    // the refund completes.
    Recording r(dir);
    start_feature(r, cleanup_wf, "cleanup", std::string("order-1"));
    const auto charge = r.activity_tasks(kFeaturesQueue, 1).at("1");
    r.client().handle(cleanup_wf, "cleanup").cancel();
    r.workflow_task(kFeaturesQueue);
    r.canceled(charge);
    r.complete(r.activity_tasks(kFeaturesQueue, 1).at("2"), to_payload(std::string("refunded")));
    require(r.workflow_task(kFeaturesQueue).back().has_cancel_workflow_execution(), "cleanup ends canceled");
    r.save("cleanup", "features_cleanup");
  }
  {
    // The minute passes before any worker takes the charge.
    Recording r(dir);
    start_feature(r, within_a_minute_wf, "slow", std::string("o"));
    r.fire_timers("slow", 1min);
    require(completes(r.workflow_task(kFeaturesQueue)), "slow completes");
    r.save("slow", "features_gave_up");
  }
  {
    // The charge completes within the minute.
    Recording r(dir);
    start_feature(r, within_a_minute_wf, "fast", std::string("o"));
    r.complete(r.activity_tasks(kFeaturesQueue, 1).at("1"), to_payload(std::string("receipt")));
    require(completes(r.workflow_task(kFeaturesQueue)), "fast completes");
    r.save("fast", "features_charged_in_time");
  }
  {
    Recording r(dir);
    start_feature(r, keeps_going_wf, "keeps-going");
    r.client().handle(keeps_going_wf, "keeps-going").cancel();
    require(completes(r.workflow_task(kFeaturesQueue)), "keeps-going completes");
    r.save("keeps-going", "features_keeps_going");
  }
  {
    Recording r(dir);
    start_feature(r, approve_wf, "in-time");
    r.client().signal("in-time", approval, std::string("ana"));
    require(completes(r.workflow_task(kFeaturesQueue)), "in-time completes");
    r.save("in-time", "features_approved");
  }
  {
    Recording r(dir);
    start_feature(r, approve_wf, "too-late");
    r.fire_timers("too-late", 24h);
    require(completes(r.workflow_task(kFeaturesQueue)), "too-late completes");
    r.save("too-late", "features_timed_out");
  }
  {
    // Two children, one after the other; the second fails.
    Recording r(dir);
    r.can_run(square_wf);
    r.start(sum_wf, "sums", kFeaturesQueue, int64_t{2});
    r.workflow_tasks_until_closed(kFeaturesQueue, "sums");
    r.save("sums", "features_children");
  }
  {
    // "nobody" runs and is not signal_nobody's child.
    Recording r(dir);
    r.start_bystander("nobody");
    start_feature(r, signal_nobody_wf, "signal-nobody");
    require(r.workflow_task(kFeaturesQueue).back().has_fail_workflow_execution(), "signal-nobody fails");
    r.save("signal-nobody", "features_signal_not_child");
  }
  {
    // Canceled: it sees the cancel request at its wait and closes canceled.
    Recording r(dir);
    record_go_ahead_child(r, "child-canceled", ChildEnd::kCanceled);
    r.save("child-canceled", "features_child_canceled");
  }
  {
    Recording r(dir);
    record_go_ahead_child(r, "child-terminated", ChildEnd::kTerminated);
    r.save("child-terminated", "features_child_terminated");
  }
  {
    Recording r(dir);
    record_go_ahead_child(r, "child-timed-out", ChildEnd::kTimedOut);
    r.save("child-timed-out", "features_child_timed_out");
  }
  {
    // A task between the signal and its outcome: a nudge sent while the
    // first task runs is written after it with a new task, which a poll
    // parked beforehand takes (started in memory) before the delivery
    // records its outcome, so the outcome waits for that task to complete.
    // The cancel request's outcome follows it as the engine writes it.
    Recording r(dir);
    r.start_bystander("counter-7");
    r.start(coordinator_wf, "coordinator", kFeaturesQueue);
    const v1::PollWorkflowTaskResponse first = r.take_workflow_task(kFeaturesQueue);
    r.client().signal("coordinator", nudge, std::string("wake up"));
    auto nudged = std::async(std::launch::async, [&r] { return r.take_workflow_task(kFeaturesQueue); });
    std::this_thread::sleep_for(200ms);  // the poll parks before the first task completes
    r.answer(first);
    require(r.answer(nudged.get()).empty(), "coordinator: the nudged task does nothing");
    r.workflow_task(kFeaturesQueue);  // the signal's outcome: the cancel request
    require(completes(r.workflow_task(kFeaturesQueue)), "coordinator completes");
    const v1::History h = fetch_history(r.connection(), "coordinator");
    require(
        tasks_before(h, [](const v1::HistoryEvent& e) { return e.has_external_workflow_execution_signaled(); }) == 2,
        "coordinator: the signal's outcome came after the nudged task");
    r.save("coordinator", "features_coordinator");
  }
  {
    Recording r(dir);
    r.start_bystander("partner");
    start_feature(r, tell_wf, "tell");
    r.client().handle(tell_wf, "tell").cancel();
    r.workflow_task(kFeaturesQueue);
    require(completes(r.workflow_task(kFeaturesQueue)), "tell completes");
    r.save("tell", "features_tell_partner");
  }
  {
    // The first run of the chain: it continues as new after its timer.
    Recording r(dir);
    r.can_run(counter_wf);
    const std::string run_id =
        r.client().start(counter_wf, {.id = "counter", .task_queue = kFeaturesQueue}, int64_t{7}).run_id();
    r.workflow_task(kFeaturesQueue);
    r.fire_timers("counter", 1s);
    require(r.workflow_task(kFeaturesQueue).back().has_continue_as_new_workflow_execution(), "counter continues");
    r.save("counter", "features_continued", run_id);
  }
  {
    side_effect_calls = 0;
    Recording r(dir);
    start_feature(r, token_wf, "token");
    r.fire_timers("token", 1s);
    require(completes(r.workflow_task(kFeaturesQueue)), "token completes");
    r.save("token", "features_side_effect");
  }
  {
    // Started on version 1, before the patch.
    Recording r(dir);
    start_feature(r, fee_v1_wf, "fee-old", std::string("o"));
    r.complete(r.activity_tasks(kFeaturesQueue, 1).at("1"), to_payload(std::string("charged o")));
    require(completes(r.workflow_task(kFeaturesQueue)), "fee-old completes");
    r.save("fee-old", "features_fee_v1");
  }
  {
    // Started on version 2: the fee, then the order.
    Recording r(dir);
    start_feature(r, fee_v2_wf, "fee-new", std::string("o"));
    r.complete(r.activity_tasks(kFeaturesQueue, 1).at("1"), to_payload(std::string("fee")));
    r.workflow_task(kFeaturesQueue);
    r.complete(r.activity_tasks(kFeaturesQueue, 1).at("2"), to_payload(std::string("charged o")));
    require(completes(r.workflow_task(kFeaturesQueue)), "fee-new completes");
    r.save("fee-new", "features_fee_v2");
  }
  {
    // b's charge completes first; the refunds in the order they were scheduled.
    Recording r(dir);
    start_feature(r, branches_wf, "branches");
    auto charges = r.activity_tasks(kFeaturesQueue, 2);
    r.complete(charges.at("2"), to_payload(std::string("B")));
    r.complete(charges.at("1"), to_payload(std::string("A")));
    r.workflow_task(kFeaturesQueue);
    auto refunds = r.activity_tasks(kFeaturesQueue, 2);
    for (const std::string id : {"3", "4"}) {
      const std::string order = from_payload<std::string>(refunds.at(id).input().payloads(0), "order");
      r.complete(refunds.at(id), to_payload("r" + order));
    }
    require(completes(r.workflow_task(kFeaturesQueue)), "branches completes");
    r.save("branches", "features_branches");
  }
  {
    // The second task throws: the task fails, as with the default policy.
    Recording r(dir);
    start_feature(r, buggy_wf, "buggy");
    r.fire_timers("buggy", 1s);
    r.failing_workflow_task(kFeaturesQueue);
    r.save("buggy", "features_buggy");
  }
  {
    Recording r(dir);
    start_feature(r, big_frame_wf, "big-frame");
    r.fire_timers("big-frame", 1s);
    require(completes(r.workflow_task(kFeaturesQueue)), "big-frame completes");
    r.save("big-frame", "features_big_frame");
  }
}

}  // namespace reprise::recorded
