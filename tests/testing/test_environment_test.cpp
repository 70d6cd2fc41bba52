// <reprise/testing.hpp>: time skipping in the TestEnvironment, and the
// replay tester against exported histories.
#include <gtest/gtest.h>

#include <optional>
#include <thread>

#include "reprise/testing.hpp"
#include "reprise/worker.hpp"
#include "tests/store/store_test_util.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

Workflow<int64_t> monthly(WorkflowContext& ctx) {
  const TimePoint start = ctx.now();
  co_await ctx.sleep(24h * 30);
  co_return std::chrono::duration_cast<std::chrono::hours>(ctx.now() - start).count();
}
inline constexpr WorkflowDef<&monthly> monthly_wf{"monthly"};

std::string slow_charge(ActivityContext&, std::string order) {
  std::this_thread::sleep_for(300ms);
  return "charged " + order;
}
inline constexpr Activity<&slow_charge> slow_charge_act{"slow_charge"};

// The timer must not win while the activity is being worked on.
Workflow<std::string> race(WorkflowContext& ctx, std::string order) {
  auto charged = ctx.execute(slow_charge_act, ActivityOptions::start_to_close(10min), order);
  auto deadline = ctx.sleep(1h);
  if (co_await any(charged, deadline) == 1) co_return "timed out";
  deadline.cancel();
  std::string receipt = co_await charged;
  co_await ctx.sleep(24h * 7);
  co_return receipt;
}
inline constexpr WorkflowDef<&race> race_wf{"race"};

// The same workflow, changed: it ships before charging.
std::string ship(ActivityContext&, std::string order) { return "shipped " + order; }
inline constexpr Activity<&ship> ship_act{"ship"};
Workflow<std::string> race_changed(WorkflowContext& ctx, std::string order) {
  co_return co_await ctx.execute(ship_act, ActivityOptions::start_to_close(10min), order);
}
inline constexpr WorkflowDef<&race_changed> race_changed_wf{"race"};

inline constexpr Signal<std::string> go{"go"};
inline constexpr Query<std::string> stage_query{"stage"};

Workflow<std::string> signal_within_three_days(WorkflowContext& ctx) {
  std::optional<std::string> value = co_await ctx.wait(go, 72h);
  co_return value ? "signal " + *value : "timed out";
}
inline constexpr WorkflowDef<&signal_within_three_days> three_days_wf{"three_days"};

Workflow<std::string> alarm(WorkflowContext& ctx) {
  std::string stage = "sleeping";
  ctx.on_query(stage_query, [&stage] { return stage; });
  co_await ctx.sleep(1h);
  stage = "woke";
  co_return co_await ctx.wait(go);
}
inline constexpr WorkflowDef<&alarm> alarm_wf{"alarm"};

inline constexpr Signal<int64_t> deposit{"deposit"};

// Waits for a deposit; a cancel request ends the wait (and the workflow, as canceled).
Workflow<int64_t> account(WorkflowContext& ctx) { co_return co_await ctx.wait(deposit); }
inline constexpr WorkflowDef<&account> account_wf{"account"};

// Deposits into one account, asks another to cancel, then tries one that is not there.
Workflow<std::string> teller(WorkflowContext& ctx, std::string to, std::string close, std::string missing) {
  co_await ctx.signal_external(to, deposit, 250);
  co_await ctx.cancel_external(close, "closing");
  try {
    co_await ctx.signal_external(missing, deposit, 1);
  } catch (const ExternalWorkflowError& e) {
    co_return std::string(e.what()) + " [" + e.cause() + "]";
  }
  co_return "delivered";
}
inline constexpr WorkflowDef<&teller> teller_wf{"teller"};

// The same workflow, changed: it closes the account before depositing.
Workflow<std::string> teller_reordered(WorkflowContext& ctx, std::string to, std::string close, std::string) {
  co_await ctx.cancel_external(close, "closing");
  co_await ctx.signal_external(to, deposit, 250);
  co_return "delivered";
}
inline constexpr WorkflowDef<&teller_reordered> teller_reordered_wf{"teller"};

TEST(TestEnvironment, WorkflowsSignalAndCancelOtherWorkflowsAndTheSenderReplays) {
  testing::TestEnvironment env;
  Worker worker(env.connection(), {.task_queue = "t", .workflow_threads = 1, .activity_threads = 1});
  worker.register_workflow(account_wf);
  worker.register_workflow(teller_wf);
  worker.start();
  Client client(env.connection());
  auto open = client.start(account_wf, {.id = "acct-1", .task_queue = "t"});
  auto closing = client.start(account_wf, {.id = "acct-2", .task_queue = "t"});
  auto sender = client.start(teller_wf, {.id = "teller", .task_queue = "t"}, std::string("acct-1"),
                             std::string("acct-2"), std::string("acct-404"));
  EXPECT_EQ(sender.result(20s),
            "signal 'deposit' to workflow 'acct-404' failed: NOT_FOUND (no such workflow, or it is closed) "
            "[NOT_FOUND]");
  EXPECT_EQ(open.result(20s), 250) << "the typed value reached the target's wait";
  try {
    closing.result(20s);
    FAIL() << "the account asked to cancel did not end as canceled";
  } catch (const WorkflowFailedError& e) {
    EXPECT_EQ(std::string(e.what()), "workflow 'acct-2' was canceled");
  }
  worker.stop();

  engine::testing::TempDir dir;
  client.export_history("teller", dir.file("teller.json"));
  EXPECT_NO_THROW(testing::replay(dir.file("teller.json"), teller_wf));
  try {
    testing::replay(dir.file("teller.json"), teller_reordered_wf);
    FAIL() << "the reordered code replayed";
  } catch (const NonDeterminismError& e) {
    EXPECT_NE(std::string(e.what()).find("history has SignalExternalWorkflowExecutionInitiated 'deposit' "
                                         "(workflow id acct-1), the workflow code did "
                                         "RequestCancelExternalWorkflowExecution (workflow id acct-2) now"),
              std::string::npos)
        << e.what();
  }
}

// Fails its first run; the retry (attempt 2, a new run) succeeds.
Workflow<std::string> flaky(WorkflowContext& ctx, std::string order) {
  if (ctx.info().attempt == 1) throw ApplicationError("Flaky", "the first run fails");
  co_return order + " on attempt " + std::to_string(ctx.info().attempt);
}
inline constexpr WorkflowDef<&flaky> flaky_wf{"flaky"};

Workflow<std::string> parent_of_flaky(WorkflowContext& ctx) {
  co_return co_await ctx.execute_child(
      flaky_wf, ChildWorkflowOptions().id("flaky-child").retry({.initial_interval = 10s, .maximum_attempts = 2}),
      std::string("child order"));
}
inline constexpr WorkflowDef<&parent_of_flaky> parent_of_flaky_wf{"parent_of_flaky"};

TEST(TestEnvironment, AWorkflowWithARetryPolicyThatFailsOnceReturnsTheSecondRunsResult) {
  testing::TestEnvironment env;
  Worker worker(env.connection(), {.task_queue = "t", .workflow_threads = 1, .activity_threads = 1});
  worker.register_workflow(flaky_wf);
  worker.register_workflow(parent_of_flaky_wf);
  worker.start();
  Client client(env.connection());
  const TimePoint before = env.now();
  EXPECT_EQ(
      client.execute(flaky_wf, {.id = "f", .task_queue = "t", .retry_policy = RetryPolicy{.initial_interval = 1h}},
                     std::string("order 7")),
      "order 7 on attempt 2");
  EXPECT_GE(env.now() - before, 1h) << "the retry waited for its backoff";
  EXPECT_EQ(client.execute(parent_of_flaky_wf, {.id = "p", .task_queue = "t"}), "child order on attempt 2")
      << "the parent sees the child's last run";
  try {
    client.execute(flaky_wf, {.id = "no-retry", .task_queue = "t"}, std::string("order 8"));
    FAIL() << "without a retry policy the failed run is the result";
  } catch (const WorkflowFailedError& e) {
    EXPECT_EQ(e.type(), "Flaky");
  }
  worker.stop();
}

TEST(TestEnvironment, TimeStandsStillWhileTheTestDoesSomethingElse) {
  testing::TestEnvironment env;
  Worker worker(env.connection(), {.task_queue = "t", .workflow_threads = 1, .activity_threads = 1});
  worker.register_workflow(three_days_wf);
  worker.start();
  Client client(env.connection());
  const TimePoint before = env.now();
  auto run = client.start(three_days_wf, {.id = "w", .task_queue = "t"});
  std::this_thread::sleep_for(300ms);  // the workflow is idle; the test is not waiting for it
  EXPECT_LT(env.now() - before, 1min) << "time skipped while the test was not waiting";
  client.signal("w", go, std::string("a"));
  EXPECT_EQ(run.result(20s), "signal a");
  worker.stop();
}

TEST(TestEnvironment, EnvSleepLetsExactlyThatMuchTimePass) {
  testing::TestEnvironment env;
  Worker worker(env.connection(), {.task_queue = "t", .workflow_threads = 1, .activity_threads = 1});
  worker.register_workflow(alarm_wf);
  worker.start();
  Client client(env.connection());
  const TimePoint before = env.now();
  auto run = client.start(alarm_wf, {.id = "a", .task_queue = "t"});
  env.sleep(30min);
  EXPECT_GE(env.now() - before, 30min);
  EXPECT_LT(env.now() - before, 1h);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(client.query("a", stage_query), "sleeping") << "polling a query does not move time";
    std::this_thread::sleep_for(10ms);
  }
  env.sleep(31min);
  EXPECT_EQ(client.query("a", stage_query), "woke") << "the one-hour timer fired within the second sleep";
  client.signal("a", go, std::string("b"));
  EXPECT_EQ(run.result(20s), "b");
  worker.stop();
}

TEST(TestEnvironment, AThirtyDaySleepFinishesAtOnceAndTheWorkflowSeesThirtyDaysPass) {
  testing::TestEnvironment env;
  Worker worker(env.connection(), {.task_queue = "t", .workflow_threads = 1, .activity_threads = 1});
  worker.register_workflow(monthly_wf);
  worker.start();
  Client client(env.connection());
  const TimePoint before = env.now();
  const auto wall = std::chrono::steady_clock::now();
  EXPECT_EQ(client.start(monthly_wf, {.id = "m", .task_queue = "t"}).result(20s), 30 * 24);
  EXPECT_LT(std::chrono::steady_clock::now() - wall, 10s);
  EXPECT_GE(env.now() - before, 24h * 30);
  worker.stop();
}

TEST(TestEnvironment, TimeHoldsStillWhileAnActivityRunsAndExportedHistoriesReplay) {
  testing::TestEnvironment env;
  Worker worker(env.connection(), {.task_queue = "t", .workflow_threads = 1, .activity_threads = 1});
  worker.register_workflow(race_wf);
  worker.register_activity(slow_charge_act);
  worker.start();
  Client client(env.connection());
  EXPECT_EQ(client.start(race_wf, {.id = "r", .task_queue = "t"}, std::string("o1")).result(20s), "charged o1")
      << "the one-hour timer did not skip ahead of the running activity";
  worker.stop();

  engine::testing::TempDir dir;
  client.export_history("r", dir.file("r.json"));
  client.export_history("r", dir.file("r.bin"), HistoryFormat::kBinary);
  EXPECT_NO_THROW(testing::replay(dir.file("r.json"), race_wf));
  EXPECT_NO_THROW(testing::replay(dir.file("r.bin"), race_wf));
  try {
    testing::replay(dir.file("r.json"), race_changed_wf);
    FAIL() << "the changed code replayed";
  } catch (const NonDeterminismError& e) {
    EXPECT_NE(std::string(e.what()).find("non-determinism at event 5: history has ActivityTaskScheduled "
                                         "'slow_charge' (activity id 1), the workflow code did ScheduleActivityTask "
                                         "'ship' (activity id 1) now"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(testing::replay(dir.file("missing.json"), race_wf), Error);
}

}  // namespace
}  // namespace reprise
