// Records the histories tests/worker/histories/ holds, against the real
// engine embedded in a TestEnvironment, and exports what the engine wrote as
// JSON, as `reprise history export` does. One group per test file: the
// workflows of workflow_instance_test.cpp (recorded_workflows.hpp) run on
// real workers, below; the others (recorded/<test file>.cpp) drive the
// engine by hand, a step at a time (recording.hpp).
//
//   build/tests/record_histories tests/worker/histories [GROUP...]
//
// The histories are what the engine writes, so replay tests see its shape
// (ActivityTaskStarted before each outcome, task events paired, the ids and
// fields it fills in), not the shape of commands turned into events by hand.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include "tests/worker/record_groups.hpp"
#include "tests/worker/recorded_workflows.hpp"
#include "tests/worker/recording.hpp"

namespace reprise::recorded {

using namespace std::chrono_literals;

void record_workflow_instance(const std::filesystem::path& dir) {
  {
    Recording r(dir, {.time_skipping = true});
    charge_does = [](ActivityContext&, Order order) -> std::string {
      if (order.id == "order-9") throw ApplicationError("CardDeclined", "card declined", true);
      return "receipt-42";
    };
    auto w = r.worker("recorded", checkout_wf, dice_wf, introspect_wf, chatty_wf, charge_card, ship_parcel);
    // An activity, then a one-hour timer (skipped), then the result.
    require(r.client().execute(checkout_wf, {.id = "checkout-7", .task_queue = "recorded"}, Order{"order-7", 1250}) ==
                "receipt-42 for order-7",
            "checkout-7");
    r.save("checkout-7", "checkout");
    // The activity fails for good and fails the workflow.
    try {
      r.client().execute(checkout_wf, {.id = "checkout-9", .task_queue = "recorded"}, Order{"order-9", 100});
      require(false, "checkout-9 did not fail");
    } catch (const WorkflowFailedError&) {
    }
    r.save("checkout-9", "checkout_declined");
    // Two runs of the same code: the same draws on replay, others per run.
    const std::string a = r.client().execute(dice_wf, {.id = "dice-a", .task_queue = "recorded"});
    const std::string b = r.client().execute(dice_wf, {.id = "dice-b", .task_queue = "recorded"});
    require(a != b, "two runs of dice drew the same");
    r.save("dice-a", "dice_a");
    r.save("dice-b", "dice_b");
    r.client().execute(introspect_wf, {.id = "wf-9", .task_queue = "recorded"});
    r.save("wf-9", "introspect");
    r.client().execute(chatty_wf, {.id = "wf-log", .task_queue = "recorded"});
    r.save("wf-log", "chatty");
    w->stop();
  }
  {
    // The first task issues nothing; the approval comes after it completed.
    Recording r(dir, {.time_skipping = true});
    auto w = r.worker("approval", awaits_approval_wf, charge_card, ship_parcel);
    auto run =
        r.client().start(awaits_approval_wf, {.id = "approval-10", .task_queue = "approval"}, Order{"order-10", 1});
    wait_for_event(*r.env().connection(), "approval-10",
                   [](const v1::HistoryEvent& e) { return e.has_workflow_task_completed(); });
    r.client().signal("approval-10", approval, std::string("approved"));
    require(run.result(30s) == "approved for order-10", "approval-10");
    r.save("approval-10", "approval");
    w->stop();
  }
  {
    // Both activities at once; the second scheduled completes first.
    Recording r(dir, {.time_skipping = true});
    Connection& connection = *r.env().connection();
    ship_does = [](ActivityContext&, std::string) -> std::string { return "tracking-9"; };
    charge_does = [&connection](ActivityContext& ctx, Order) -> std::string {
      wait_for_event(connection, ctx.info().workflow_id,
                     [](const v1::HistoryEvent& e) { return e.has_activity_task_completed(); });
      return "receipt-1";
    };
    auto w = r.worker("both", both_wf, charge_card, ship_parcel);
    require(
        r.client().execute(both_wf, {.id = "both-1", .task_queue = "both"}, Order{"o1", 1}) == "receipt-1+tracking-9",
        "both-1");
    r.save("both-1", "both");
    w->stop();
  }
  {
    // The one-minute timer fires while the charge is still running. Time
    // moves by hand: with skipping it holds still while an activity runs.
    Recording r(dir, {.time_skipping = false});
    std::atomic<bool> charging{false}, release{false};
    charge_does = [&](ActivityContext&, Order) -> std::string {
      charging = true;
      while (!release) std::this_thread::sleep_for(5ms);
      return "too late";
    };
    auto w = r.worker("slow", charge_or_give_up_wf, charge_card, ship_parcel);
    auto run = r.client().start(charge_or_give_up_wf, {.id = "slow-1", .task_queue = "slow"}, Order{"slow", 1});
    while (!charging) std::this_thread::sleep_for(5ms);
    wait_for_event(*r.env().connection(), "slow-1",
                   [](const v1::HistoryEvent& e) { return e.has_workflow_task_completed(); });
    r.env().advance(61s);
    require(run.result(30s) == "gave up", "slow-1");
    release = true;
    r.save("slow-1", "give_up");
    w->stop();
  }
  charge_does = nullptr;
  ship_does = nullptr;
}

}  // namespace reprise::recorded

namespace {

// Each group records the histories of one test file.
struct Group {
  const char* name;
  void (*record)(const std::filesystem::path&);
};
constexpr Group kGroups[] = {
    {"workflow_instance", reprise::recorded::record_workflow_instance},
    {"braced_temporaries", reprise::recorded::record_braced_temporaries},
    {"waiting", reprise::recorded::record_waiting},
    {"worker_tasks", reprise::recorded::record_worker_tasks},
    {"stackful", reprise::recorded::record_stackful},
    {"workflow_features", reprise::recorded::record_workflow_features},
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: record_histories DIRECTORY [GROUP...]   (tests/worker/histories; all groups)\n");
    return 2;
  }
  try {
    std::filesystem::create_directories(argv[1]);
    for (const Group& g : kGroups) {
      bool chosen = argc == 2;
      for (int i = 2; i < argc; ++i) chosen = chosen || std::strcmp(argv[i], g.name) == 0;
      if (chosen) g.record(argv[1]);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "record_histories: %s\n", e.what());
    return 1;
  }
  return 0;
}
