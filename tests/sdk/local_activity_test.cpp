// Local activities (ctx.execute_local) through the SDK against a real
// reprise-server: run by the worker inside the workflow task, recorded as
// one marker, read back from it on replay, retried locally, and kept alive
// past the workflow task's timeout.
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "../server/server_harness.hpp"
#include "reprise/stackful.hpp"
#include "reprise/testing.hpp"
#include "reprise/worker.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

std::atomic<int> greet_calls{0};
std::string greet(ActivityContext&, std::string name) {
  ++greet_calls;
  return "Hello, " + name + "!";
}
inline constexpr Activity<&greet> greet_activity{"greet"};

Workflow<std::string> hello_local(WorkflowContext& ctx, std::string name) {
  co_return co_await ctx.execute_local(greet_activity, LocalActivityOptions::start_to_close(5s), name);
}
inline constexpr WorkflowDef<&hello_local> hello_local_wf{"hello_local"};

// The same workflow type, changed to run the greeting as a normal activity.
Workflow<std::string> hello_normal(WorkflowContext& ctx, std::string name) {
  co_return co_await ctx.execute(greet_activity, ActivityOptions::start_to_close(5s), name);
}
inline constexpr WorkflowDef<&hello_normal> hello_changed_to_normal{"hello_local"};

// ... and changed to not run it at all.
Workflow<std::string> hello_inline(WorkflowContext&, std::string name) { co_return "Hello, " + name + "!"; }
inline constexpr WorkflowDef<&hello_inline> hello_changed_to_inline{"hello_local"};

// Fails its first `flaky_failures` attempts, then greets.
std::atomic<int> flaky_calls{0};
int flaky_failures = 0;
std::string flaky(ActivityContext& ctx, std::string name) {
  ++flaky_calls;
  if (ctx.info().attempt <= flaky_failures)
    throw std::runtime_error("flaky attempt " + std::to_string(ctx.info().attempt));
  return "Hello, " + name + " after " + std::to_string(ctx.info().attempt) + "!";
}
inline constexpr Activity<&flaky> flaky_activity{"flaky"};

Workflow<std::string> flaky_local(WorkflowContext& ctx, std::string name, int max_attempts) {
  auto options = LocalActivityOptions::start_to_close(5s).retry_initial_interval(10ms).maximum_attempts(max_attempts);
  try {
    co_return co_await ctx.execute_local(flaky_activity, options, name);
  } catch (const ActivityError& e) {
    co_return std::string("caught: ") + e.what();
  }
}
inline constexpr WorkflowDef<&flaky_local> flaky_local_wf{"flaky_local"};

std::atomic<int> refuse_calls{0};
std::string refuse(ActivityContext&, std::string) {
  ++refuse_calls;
  throw ApplicationError("Refused", "no greeting today", /*non_retryable=*/true);
}
inline constexpr Activity<&refuse> refuse_activity{"refuse"};

Workflow<std::string> refused_local(WorkflowContext& ctx, std::string name) {
  try {
    co_return co_await ctx.execute_local(refuse_activity,
                                         LocalActivityOptions::start_to_close(5s).retry_initial_interval(10ms), name);
  } catch (const ActivityError& e) {
    co_return e.cause_type() + ": " + e.what();
  }
}
inline constexpr WorkflowDef<&refused_local> refused_local_wf{"refused_local"};

std::atomic<int> slow_calls{0};
std::string slow_greet(ActivityContext&, std::string name) {
  ++slow_calls;
  std::this_thread::sleep_for(1100ms);
  return "Hello, " + name + ", slowly!";
}
inline constexpr Activity<&slow_greet> slow_greet_activity{"slow_greet"};

Workflow<std::string> slow_local(WorkflowContext& ctx, std::string name) {
  co_return co_await ctx.execute_local(slow_greet_activity, LocalActivityOptions::start_to_close(10s), name);
}
inline constexpr WorkflowDef<&slow_local> slow_local_wf{"slow_local"};

std::string stackful_hello(StackfulContext& ctx, std::string name) {
  std::string first = ctx.execute_local(greet_activity, LocalActivityOptions::start_to_close(5s), name).get();
  return first + " " + ctx.execute_local(greet_activity, LocalActivityOptions::start_to_close(5s), name + "2").get();
}
inline constexpr WorkflowDef<&stackful_hello> stackful_hello_wf{"stackful_hello"};

v1::History history_of(Connection& connection, const std::string& workflow_id) {
  v1::GetHistoryRequest r;
  r.mutable_workflow_execution()->set_workflow_id(workflow_id);
  return connection.get_history(r, 10s).history();
}

std::vector<v1::EventType> types_of(const v1::History& history) {
  std::vector<v1::EventType> out;
  for (const auto& e : history.events()) out.push_back(e.event_type());
  return out;
}

int count_of(const v1::History& history, v1::EventType type) {
  int n = 0;
  for (const auto& e : history.events()) n += e.event_type() == type;
  return n;
}

const std::vector<v1::EventType> kOneTaskWithAMarker = {
    v1::EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
    v1::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
    v1::EVENT_TYPE_WORKFLOW_TASK_STARTED,
    v1::EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    v1::EVENT_TYPE_MARKER_RECORDED,
    v1::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
};

class LocalActivities : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<Server>(dir_.file("local.db"));
    connection_ = Connection::remote(server_->address());
  }
  // A worker with the workflows and activities of this file.
  std::unique_ptr<Worker> start_worker(WorkerOptions options) {
    auto worker = std::make_unique<Worker>(connection_, std::move(options));
    worker->register_workflow(hello_local_wf);
    worker->register_workflow(flaky_local_wf);
    worker->register_workflow(refused_local_wf);
    worker->register_workflow(slow_local_wf);
    worker->register_workflow(stackful_hello_wf);
    worker->register_activity(greet_activity);
    worker->register_activity(flaky_activity);
    worker->register_activity(refuse_activity);
    worker->register_activity(slow_greet_activity);
    worker->start();
    return worker;
  }

  TempDir dir_;
  std::unique_ptr<Server> server_;
  std::shared_ptr<Connection> connection_;
};

TEST_F(LocalActivities, HelloCompletesInOneWorkflowTaskAndReplaysWithoutRunningTheFunction) {
  greet_calls = 0;
  auto worker = start_worker({.task_queue = "q"});
  Client client(connection_);
  EXPECT_EQ(client.start(hello_local_wf, {.id = "hello-1", .task_queue = "q"}, std::string("Ada")).result(30s),
            "Hello, Ada!");
  worker->stop();
  EXPECT_EQ(greet_calls.load(), 1);
  const v1::History history = history_of(*connection_, "hello-1");
  EXPECT_EQ(types_of(history), kOneTaskWithAMarker);
  const auto& marker = history.events(4).marker_recorded();
  EXPECT_EQ(marker.marker_name(), "local_activity");
  EXPECT_EQ(from_payload<std::string>(marker.details().at("type").payloads(0), "type"), "greet");
  EXPECT_EQ(from_payload<std::string>(marker.details().at("result").payloads(0), "result"), "Hello, Ada!");

  testing::replay(history, hello_local_wf);
  EXPECT_EQ(greet_calls.load(), 1) << "replay read the marker and did not run the activity";
}

TEST_F(LocalActivities, ChangedCodeAgainstTheRecordedMarkerIsNonDeterminism) {
  auto worker = start_worker({.task_queue = "q"});
  Client client(connection_);
  EXPECT_EQ(client.start(hello_local_wf, {.id = "nd-1", .task_queue = "q"}, std::string("Bo")).result(30s),
            "Hello, Bo!");
  worker->stop();
  const v1::History history = history_of(*connection_, "nd-1");
  EXPECT_THROW(testing::replay(history, hello_changed_to_normal), NonDeterminismError);
  EXPECT_THROW(testing::replay(history, hello_changed_to_inline), NonDeterminismError);

  // And the other way round: a history of the normal activity, replayed by
  // code that now runs it locally.
  Worker normal(connection_, {.task_queue = "n"});
  normal.register_workflow(hello_changed_to_normal);
  normal.register_activity(greet_activity);
  normal.start();
  EXPECT_EQ(client.start(hello_changed_to_normal, {.id = "nd-2", .task_queue = "n"}, std::string("Cy")).result(30s),
            "Hello, Cy!");
  normal.stop();
  EXPECT_THROW(testing::replay(history_of(*connection_, "nd-2"), hello_local_wf), NonDeterminismError);
}

TEST_F(LocalActivities, RetriedWithinTheTaskAndRecordedAsOneMarker) {
  flaky_calls = 0;
  flaky_failures = 2;
  auto worker = start_worker({.task_queue = "q"});
  Client client(connection_);
  EXPECT_EQ(client.start(flaky_local_wf, {.id = "flaky-1", .task_queue = "q"}, std::string("Di"), 5).result(30s),
            "Hello, Di after 3!");
  worker->stop();
  EXPECT_EQ(flaky_calls.load(), 3);
  const v1::History history = history_of(*connection_, "flaky-1");
  EXPECT_EQ(types_of(history), kOneTaskWithAMarker);
  EXPECT_EQ(from_payload<int>(history.events(4).marker_recorded().details().at("attempts").payloads(0), "attempts"), 3);
}

TEST_F(LocalActivities, ExhaustedRetriesAndNonRetryableErrorsReachTheCodeAsActivityError) {
  flaky_calls = 0;
  flaky_failures = 100;
  refuse_calls = 0;
  auto worker = start_worker({.task_queue = "q"});
  Client client(connection_);
  EXPECT_EQ(client.start(flaky_local_wf, {.id = "flaky-2", .task_queue = "q"}, std::string("Ed"), 2).result(30s),
            "caught: activity 'flaky' failed: flaky attempt 2");
  EXPECT_EQ(flaky_calls.load(), 2);
  EXPECT_EQ(client.start(refused_local_wf, {.id = "refused-1", .task_queue = "q"}, std::string("Fa")).result(30s),
            "Refused: activity 'refuse' failed: no greeting today");
  EXPECT_EQ(refuse_calls.load(), 1) << "a non-retryable failure is not retried";
  worker->stop();
  // The failure is recorded: replay throws the same error without running it.
  testing::replay(history_of(*connection_, "refused-1"), refused_local_wf);
  EXPECT_EQ(refuse_calls.load(), 1);
}

// A local activity runs in the worker that runs the workflow task: one this
// worker has not registered fails at once, non-retryable, and the failure is
// recorded in the marker like any other outcome.
TEST_F(LocalActivities, AnActivityThisWorkerHasNotRegisteredFailsAtOnceAsNonRetryable) {
  refuse_calls = 0;
  Worker worker(connection_, {.task_queue = "unregistered"});
  worker.register_workflow(refused_local_wf);  // but not refuse_activity
  worker.start();
  Client client(connection_);
  const std::string result =
      client.start(refused_local_wf, {.id = "unregistered-1", .task_queue = "unregistered"}, std::string("Ken"))
          .result(30s);
  worker.stop();
  EXPECT_NE(result.find("activity 'refuse' is not registered with this worker"), std::string::npos) << result;
  EXPECT_EQ(refuse_calls.load(), 0);
  const v1::History history = history_of(*connection_, "unregistered-1");
  EXPECT_EQ(types_of(history), kOneTaskWithAMarker);
  const auto& marker = history.events(4).marker_recorded();
  EXPECT_TRUE(marker.failure().non_retryable()) << marker.failure().ShortDebugString();
  EXPECT_EQ(from_payload<int>(marker.details().at("attempts").payloads(0), "attempts"), 0) << "never run";
}

TEST_F(LocalActivities, LongerThanTheWorkflowTaskTimeoutKeepsTheTaskAlive) {
  slow_calls = 0;
  auto worker = start_worker({.task_queue = "q"});
  Client client(connection_);
  // 1 s task timeout: the worker completes the task at 0.8 s, asks for the
  // next at once, and records the marker there.
  EXPECT_EQ(
      client.start(slow_local_wf, {.id = "slow-1", .task_queue = "q", .workflow_task_timeout = 1s}, std::string("Gus"))
          .result(10s),
      "Hello, Gus, slowly!");
  worker->stop();
  EXPECT_EQ(slow_calls.load(), 1);
  const v1::History history = history_of(*connection_, "slow-1");
  EXPECT_EQ(count_of(history, v1::EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT), 0);
  EXPECT_EQ(count_of(history, v1::EVENT_TYPE_WORKFLOW_TASK_FAILED), 0);
  EXPECT_EQ(count_of(history, v1::EVENT_TYPE_MARKER_RECORDED), 1);
  EXPECT_GE(count_of(history, v1::EVENT_TYPE_WORKFLOW_TASK_COMPLETED), 2);
  testing::replay(history, slow_local_wf);
  EXPECT_EQ(slow_calls.load(), 1);
}

TEST_F(LocalActivities, LongerThanTheTaskTimeoutWithTheCacheOffRunsOnce) {
  slow_calls = 0;
  auto worker = start_worker({.task_queue = "q", .cache_size = 0});
  Client client(connection_);
  EXPECT_EQ(
      client.start(slow_local_wf, {.id = "slow-2", .task_queue = "q", .workflow_task_timeout = 1s}, std::string("Hal"))
          .result(10s),
      "Hello, Hal, slowly!");
  worker->stop();
  EXPECT_EQ(slow_calls.load(), 1) << "the replayed task found the execution in flight";
  EXPECT_EQ(count_of(history_of(*connection_, "slow-2"), v1::EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT), 0);
}

TEST_F(LocalActivities, StackfulWorkflowRunsTwoInOneTask) {
  greet_calls = 0;
  auto worker = start_worker({.task_queue = "q"});
  Client client(connection_);
  EXPECT_EQ(client.start(stackful_hello_wf, {.id = "stackful-1", .task_queue = "q"}, std::string("Ivy")).result(30s),
            "Hello, Ivy! Hello, Ivy2!");
  worker->stop();
  EXPECT_EQ(greet_calls.load(), 2);
  const v1::History history = history_of(*connection_, "stackful-1");
  EXPECT_EQ(count_of(history, v1::EVENT_TYPE_WORKFLOW_TASK_COMPLETED), 1);
  EXPECT_EQ(count_of(history, v1::EVENT_TYPE_MARKER_RECORDED), 2);
  testing::replay(history, stackful_hello_wf);
  EXPECT_EQ(greet_calls.load(), 2);
}

TEST(LocalActivitiesInTestEnvironment, RunAndRecordAMarker) {
  greet_calls = 0;
  testing::TestEnvironment env;
  Worker worker(env.connection(), {.task_queue = "t"});
  worker.register_workflow(hello_local_wf);
  worker.register_activity(greet_activity);
  worker.start();
  Client client(env.connection());
  EXPECT_EQ(client.start(hello_local_wf, {.id = "env-1", .task_queue = "t"}, std::string("Jo")).result(30s),
            "Hello, Jo!");
  worker.stop();
  EXPECT_EQ(greet_calls.load(), 1);
  EXPECT_EQ(types_of(history_of(*env.connection(), "env-1")), kOneTaskWithAMarker);
}

}  // namespace
}  // namespace reprise
