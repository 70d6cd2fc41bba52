// The SDK's control features against a real reprise-server: canceling a
// workflow (the activity hears it, cleanup runs), child workflows,
// continue-as-new chains, terminate, describe, result timeouts, and a buggy
// workflow that blocks on its failed task instead of failing.
#include <atomic>
#include <iterator>
#include <set>
#include <sstream>
#include <thread>

#include "../captured_stderr.hpp"
#include "../server/server_harness.hpp"
#include "reprise/client.hpp"
#include "reprise/worker.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

std::atomic<bool> reserve_saw_cancel{false};
std::atomic<int> releases{0};

// Holds a reservation until the workflow is canceled, heartbeating so it hears of it.
std::string reserve(ActivityContext& ctx, std::string item) {
  for (int i = 0; i < 600; ++i) {
    ctx.heartbeat(i);
    if (ctx.cancel_requested()) {
      reserve_saw_cancel = true;
      throw CanceledError("reservation of " + item + " canceled");
    }
    std::this_thread::sleep_for(50ms);
  }
  return "held " + item;
}
std::string release(ActivityContext&, std::string item) {
  ++releases;
  return "released " + item;
}
inline constexpr Activity<&reserve> reserve_item{"reserve"};
inline constexpr Activity<&release> release_item{"release"};

Workflow<std::string> hold(WorkflowContext& ctx, std::string item) {
  try {
    co_return co_await ctx.execute(reserve_item, ActivityOptions::start_to_close(1min).heartbeat(5s), item);
  } catch (const CanceledError&) {
  }
  auto cleanup = ctx.non_cancellable();
  co_await cleanup.execute(release_item, ActivityOptions::start_to_close(10s), item);
  throw CanceledError("hold of " + item + " canceled");
}
inline constexpr WorkflowDef<&hold> hold_wf{"hold"};

Workflow<int64_t> square(WorkflowContext&, int64_t n) { co_return n* n; }
inline constexpr WorkflowDef<&square> square_wf{"square"};

// Starts every child first, then collects: the children run side by side.
Workflow<int64_t> sum_of_squares(WorkflowContext& ctx, int64_t n) {
  std::vector<ChildWorkflowFuture<int64_t>> children;
  for (int64_t i = 1; i <= n; ++i) children.push_back(ctx.execute_child(square_wf, ChildWorkflowOptions(), i));
  int64_t sum = 0;
  for (auto& child : children) sum += co_await child;
  co_return sum;
}
inline constexpr WorkflowDef<&sum_of_squares> sum_wf{"sum_of_squares"};

Workflow<std::string> countdown(WorkflowContext& ctx, int64_t n, int64_t runs);
inline constexpr WorkflowDef<&countdown> countdown_wf{"countdown"};
Workflow<std::string> countdown(WorkflowContext& ctx, int64_t n, int64_t runs) {
  co_await ctx.sleep(10ms);
  if (n > 0) co_await ctx.continue_as_new(countdown_wf, n - 1, runs + 1);
  co_return "lift-off after " + std::to_string(runs) + " runs";
}

// Each run of the chain draws a uuid and passes on what the runs before it
// drew; the last run returns them all, space-separated.
Workflow<std::string> draws_per_run(WorkflowContext& ctx, int64_t n, std::string drawn);
inline constexpr WorkflowDef<&draws_per_run> draws_per_run_wf{"draws_per_run"};
Workflow<std::string> draws_per_run(WorkflowContext& ctx, int64_t n, std::string drawn) {
  drawn += (drawn.empty() ? "" : " ") + ctx.uuid();
  if (n > 0) co_await ctx.continue_as_new(draws_per_run_wf, n - 1, drawn);
  co_return drawn;
}

inline constexpr Signal<std::string> go{"go"};
Workflow<std::string> waits(WorkflowContext& ctx) { co_return co_await ctx.wait(go); }
inline constexpr WorkflowDef<&waits> waits_wf{"waits"};

Workflow<int64_t> buggy(WorkflowContext&) {
  std::vector<int64_t> v{1, 2, 3};
  co_return v.at(7);
}
inline constexpr WorkflowDef<&buggy> buggy_wf{"buggy"};

// Fails its first run; the retry waits for a signal.
Workflow<std::string> fails_once(WorkflowContext& ctx) {
  if (ctx.info().attempt == 1) throw ApplicationError("flaky", "the first run fails");
  co_return co_await ctx.wait(go);
}
inline constexpr WorkflowDef<&fails_once> fails_once_wf{"fails_once"};

struct Fixture {
  TempDir dir;
  Server server{dir.file("control.db")};
  std::shared_ptr<Connection> connection = Connection::remote(server.address());
  Client client{connection};
  Worker worker{connection, {.task_queue = "control", .workflow_threads = 2, .activity_threads = 2}};

  Fixture() {
    worker.register_workflow(hold_wf);
    worker.register_workflow(square_wf);
    worker.register_workflow(sum_wf);
    worker.register_workflow(countdown_wf);
    worker.register_workflow(draws_per_run_wf);
    worker.register_workflow(waits_wf);
    worker.register_workflow(buggy_wf);
    worker.register_workflow(fails_once_wf);
    worker.register_activity(reserve_item);
    worker.register_activity(release_item);
    worker.start();
  }
  ~Fixture() { worker.stop(); }
};

TEST(SdkControl, CancelingAWorkflowReachesItsActivityAndItsCleanupRuns) {
  releases = 0;
  reserve_saw_cancel = false;
  Fixture f;
  auto run = f.client.start(hold_wf, {.id = "hold-1", .task_queue = "control"}, std::string("seat 12A"));
  for (int i = 0; i < 200; ++i) {
    auto d = run.describe();
    if (d.pending_activities_size() == 1 && d.pending_activities(0).started()) break;
    std::this_thread::sleep_for(20ms);
  }
  run.cancel("customer left");
  try {
    run.result(30s);
    FAIL() << "a canceled workflow has no result";
  } catch (const WorkflowFailedError& e) {
    EXPECT_EQ(std::string(e.what()), "workflow 'hold-1' was canceled");
  }
  EXPECT_EQ(run.describe().info().status(), v1::WORKFLOW_EXECUTION_STATUS_CANCELED);
  EXPECT_EQ(releases.load(), 1) << "the non-cancellable cleanup ran";
  // Heartbeats are throttled to one per 4 s (0.8 × the 5 s heartbeat
  // timeout): the activity hears of the cancel within about that.
  for (int i = 0; i < 500 && !reserve_saw_cancel; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(reserve_saw_cancel) << "the activity heard of the cancel at a heartbeat";
}

TEST(SdkControl, ChildWorkflowsRunSideBySideAndReturnTheirResults) {
  Fixture f;
  EXPECT_EQ(f.client.execute(sum_wf, {.id = "sums", .task_queue = "control"}, int64_t{4}), 1 + 4 + 9 + 16);
  auto child = f.client.handle(
      square_wf,
      "sums/square-3@" + f.client.handle(sum_wf, "sums").describe().info().execution().run_id().substr(0, 8));
  EXPECT_EQ(child.describe().info().parent_execution().workflow_id(), "sums");
  EXPECT_EQ(child.result(), 9);
}

TEST(SdkControl, AContinueAsNewChainEndsWithTheLastRunsResult) {
  Fixture f;
  auto run = f.client.start(countdown_wf, {.id = "rocket", .task_queue = "control"}, int64_t{3}, int64_t{1});
  EXPECT_EQ(run.result(30s), "lift-off after 4 runs");
  EXPECT_NE(f.client.handle(countdown_wf, "rocket").describe().info().execution().run_id(), run.run_id())
      << "the last run is a new run of the same workflow id";
}

// As in Temporal, each run of a continue-as-new chain seeds random() and
// uuid() from its own run id: a loop that continues as new does not draw the
// same ids in every run (replay of one run still draws what it drew).
TEST(SdkControl, EachRunOfAContinueAsNewChainDrawsItsOwnUuids) {
  Fixture f;
  auto run = f.client.start(draws_per_run_wf, {.id = "ids", .task_queue = "control"}, int64_t{2}, std::string());
  const std::string drawn = run.result(30s);
  std::istringstream words(drawn);
  const std::set<std::string> ids{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
  EXPECT_EQ(ids.size(), 3u) << "three runs, three different uuids: " << drawn;
}

TEST(SdkControl, ResultCanTimeOutAndTerminateEndsTheWorkflow) {
  Fixture f;
  auto run = f.client.start(waits_wf, {.id = "idle", .task_queue = "control"});
  EXPECT_THROW(run.result(300ms), ResultTimeoutError);
  EXPECT_EQ(run.describe().info().status(), v1::WORKFLOW_EXECUTION_STATUS_RUNNING);
  run.terminate("no longer needed");
  try {
    run.result();
    FAIL() << "a terminated workflow has no result";
  } catch (const WorkflowFailedError& e) {
    EXPECT_EQ(std::string(e.what()), "workflow 'idle' was terminated: no longer needed");
  }
  EXPECT_EQ(run.describe().info().status(), v1::WORKFLOW_EXECUTION_STATUS_TERMINATED);
}

// The handle start() gave names the first run; after a retry, describe,
// cancel and terminate must reach the live second run, not the failed one.
TEST(SdkControl, AHandleFollowsItsWorkflowIntoTheRetriedRun) {
  Fixture f;
  const StartOptions options{.id = "flaky",
                             .task_queue = "control",
                             .retry_policy = RetryPolicy{.initial_interval = 10ms, .maximum_attempts = 3}};
  auto run = f.client.start(fails_once_wf, options);
  v1::DescribeWorkflowResponse d = run.describe();
  for (int i = 0; i < 500 && d.info().execution().run_id() == run.run_id(); ++i) {
    std::this_thread::sleep_for(10ms);
    d = run.describe();
  }
  EXPECT_NE(d.info().execution().run_id(), run.run_id()) << "describe reaches the retried run";
  EXPECT_EQ(d.info().status(), v1::WORKFLOW_EXECUTION_STATUS_RUNNING);
  const std::string retried = d.info().execution().run_id();

  run.cancel("changed my mind");  // the retried run waits for a signal: it hears the cancel there
  EXPECT_THROW(run.result(30s), WorkflowFailedError);
  EXPECT_EQ(run.describe().info().status(), v1::WORKFLOW_EXECUTION_STATUS_CANCELED);
  EXPECT_EQ(run.describe().info().execution().run_id(), retried);

  auto second = f.client.start(
      fails_once_wf, {.id = "flaky-2", .task_queue = "control", .retry_policy = RetryPolicy{.initial_interval = 10ms}});
  for (int i = 0; i < 500 && second.describe().info().execution().run_id() == second.run_id(); ++i) {
    std::this_thread::sleep_for(10ms);
  }
  second.terminate("enough");
  EXPECT_EQ(second.describe().info().status(), v1::WORKFLOW_EXECUTION_STATUS_TERMINATED)
      << "terminate reached the retried run";
}

TEST(SdkControl, ABugBlocksTheWorkflowOnAFailedTaskThatDescribeShows) {
  Fixture f;
  std::string run_id;
  // The worker logs to this process's stderr; the task may fail as soon as the run starts.
  const std::string logged = ::reprise::testing::captured_stderr_of([&] {
    auto run = f.client.start(buggy_wf, {.id = "bug", .task_queue = "control"});
    run_id = run.run_id();
    std::string failure;
    for (int i = 0; i < 200 && failure.empty(); ++i) {
      failure = run.describe().last_workflow_task_failure().message();
      std::this_thread::sleep_for(20ms);
    }
    EXPECT_NE(failure.find("workflow 'buggy' threw: vector::_M_range_check"), std::string::npos) << failure;
    EXPECT_EQ(run.describe().info().status(), v1::WORKFLOW_EXECUTION_STATUS_RUNNING)
        << "the workflow waits for fixed code instead of failing";
    run.terminate("bug");
  });
  EXPECT_NE(logged.find("level=warn msg=\"workflow task failed\" workflow_id=bug run_id=" + run_id +
                        " cause=WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_CODE_ERROR reason=\"workflow 'buggy' threw: "
                        "vector::_M_range_check"),
            std::string::npos)
      << "the worker logs the failed task with its workflow and run ids:\n"
      << logged;
}

std::atomic<bool> long_job_running{false};
std::atomic<bool> long_job_canceled{false};
std::atomic<std::chrono::steady_clock::time_point> long_job_canceled_at{};
std::string long_job(ActivityContext& ctx, int64_t) {
  long_job_running = true;
  for (int i = 0; i < 1200; ++i) {
    ctx.heartbeat(i);
    if (ctx.cancel_requested()) {
      long_job_canceled_at = std::chrono::steady_clock::now();
      long_job_canceled = true;
      throw CanceledError("shutting down");
    }
    std::this_thread::sleep_for(25ms);
  }
  return "done";
}
inline constexpr Activity<&long_job> long_job_act{"long_job"};
Workflow<std::string> long_workflow(WorkflowContext& ctx) {
  co_return co_await ctx.execute(long_job_act, ActivityOptions::start_to_close(1min), int64_t{1});
}
inline constexpr WorkflowDef<&long_workflow> long_wf{"long_workflow"};

TEST(SdkControl, StopGivesRunningActivitiesTheirGraceAndThenCancelsThem) {
  long_job_running = false;
  long_job_canceled = false;
  TempDir dir;
  auto connection = Connection::embedded(dir.file("grace.db"));
  Worker worker(connection, {.task_queue = "grace", .shutdown_grace = std::chrono::milliseconds(300)});
  worker.register_workflow(long_wf);
  worker.register_activity(long_job_act);
  worker.start();
  Client client(connection);
  auto run = client.start(long_wf, {.id = "long", .task_queue = "grace"});
  // The activity is running. (A pending activity is only scheduled: on a
  // loaded machine it could still be on its way to the worker when a fixed
  // pause ran out, and stop() would find none to cancel.)
  for (int i = 0; i < 1000 && !long_job_running; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(long_job_running) << "the activity did not start within 10 s";
  const auto stopping = std::chrono::steady_clock::now();
  worker.stop();
  EXPECT_TRUE(long_job_canceled) << "the activity was told to stop once the grace ran out";
  EXPECT_GE(long_job_canceled_at.load() - stopping, 300ms) << "the activity was canceled before its grace ran out";
  EXPECT_LT(std::chrono::steady_clock::now() - stopping, 5s) << "stop() did not wait for the 30 s activity";
}

}  // namespace
}  // namespace reprise
