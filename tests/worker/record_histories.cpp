// Records the histories tests/worker/histories/ holds: runs each workflow of
// recorded_workflows.hpp against the real engine, embedded (the testing
// library's TestEnvironment), with real workers, and exports what the
// engine wrote as JSON, as `reprise history export` does.
//
//   build/tests/record_histories tests/worker/histories
//
// The histories are what the engine writes, so replay tests see its shape
// (ActivityTaskStarted before each outcome, task events paired, the ids and
// fields it fills in), not the shape of commands turned into events by hand.
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "reprise/testing.hpp"
#include "reprise/worker.hpp"
#include "tests/worker/recorded_workflows.hpp"

namespace reprise::recorded {
namespace {

using namespace std::chrono_literals;

void require(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

// Waits (in real time) until the history of `id` has an event `has`.
template <typename Has>
void wait_for_event(Connection& connection, const std::string& id, Has has) {
  for (int i = 0; i < 1000; ++i) {
    const v1::History history = fetch_history(connection, id);
    for (const v1::HistoryEvent& e : history.events()) {
      if (has(e)) return;
    }
    std::this_thread::sleep_for(10ms);
  }
  throw std::runtime_error("the history of " + id + " never got the event waited for");
}

class Recording {
 public:
  explicit Recording(std::filesystem::path dir, testing::TestEnvironmentOptions options = {})
      : dir_(std::move(dir)), env_(options), client_(env_.connection()) {}
  testing::TestEnvironment& env() { return env_; }
  Client& client() { return client_; }
  // A worker on `queue` with the given workflows and both activities.
  template <typename... Defs>
  std::unique_ptr<Worker> worker(const std::string& queue, const Defs&... workflows) {
    auto w = std::make_unique<Worker>(env_.connection(), WorkerOptions{.task_queue = queue, .identity = "recorder"});
    (w->register_workflow(workflows), ...);
    w->register_activity(charge_card);
    w->register_activity(ship_parcel);
    w->start();
    return w;
  }
  void save(const std::string& workflow_id, const std::string& name) {
    const std::string path = (dir_ / (name + ".json")).string();
    client_.export_history(workflow_id, path);
    std::printf("%s: %d events\n", path.c_str(), fetch_history(*env_.connection(), workflow_id).events_size());
  }

 private:
  std::filesystem::path dir_;
  testing::TestEnvironment env_;
  Client client_;
};

void record_all(const std::filesystem::path& dir) {
  {
    Recording r(dir);
    charge_does = [](ActivityContext&, Order order) -> std::string {
      if (order.id == "order-9") throw ApplicationError("CardDeclined", "card declined", true);
      return "receipt-42";
    };
    auto w = r.worker("recorded", checkout_wf, dice_wf, introspect_wf, chatty_wf);
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
    Recording r(dir);
    auto w = r.worker("approval", awaits_approval_wf);
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
    Recording r(dir);
    Connection& connection = *r.env().connection();
    ship_does = [](ActivityContext&, std::string) -> std::string { return "tracking-9"; };
    charge_does = [&connection](ActivityContext& ctx, Order) -> std::string {
      wait_for_event(connection, ctx.info().workflow_id,
                     [](const v1::HistoryEvent& e) { return e.has_activity_task_completed(); });
      return "receipt-1";
    };
    auto w = r.worker("both", both_wf);
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
    auto w = r.worker("slow", charge_or_give_up_wf);
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

}  // namespace
}  // namespace reprise::recorded

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: record_histories DIRECTORY   (tests/worker/histories)\n");
    return 2;
  }
  try {
    std::filesystem::create_directories(argv[1]);
    reprise::recorded::record_all(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "record_histories: %s\n", e.what());
    return 1;
  }
  return 0;
}
