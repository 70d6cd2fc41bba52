// Requests a production server meets from old, buggy or hostile clients,
// sent to a real reprise-server process: none may crash it, poison a
// workflow, or stop the timers of others; each refusal names the field.
#include <sqlite3.h>

#include <thread>

#include "server_harness.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

bool alive(Stub& stub) {
  v1::HealthResponse health;
  return call(stub, &Stub::Health, v1::HealthRequest(), &health).ok();
}

v1::PollActivityTaskResponse poll_activity(Stub& stub) {
  v1::PollActivityTaskRequest r;
  r.mutable_task_queue()->set_name("q");
  v1::PollActivityTaskResponse out;
  for (int i = 0; i < 10 && out.task_token().empty(); ++i)
    EXPECT_TRUE(call(stub, &Stub::PollActivityTask, r, &out).ok());
  return out;
}

TEST(HostileInput, AnUnknownEnumValueIsRefusedNamingTheFieldAndTheServerLivesOn) {
  TempDir dir;
  Server server(dir.file("enum.db"));
  v1::StartWorkflowResponse started;
  ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("wf"), &started).ok());
  auto task = poll_workflow(server.stub());
  ASSERT_FALSE(task.task_token().empty());

  v1::FailWorkflowTaskRequest fail;
  fail.set_task_token(task.task_token());
  fail.set_cause(static_cast<v1::WorkflowTaskFailedCause>(999));
  fail.mutable_failure()->set_message("boom");
  v1::FailWorkflowTaskResponse ignored;
  grpc::Status s = call(server.stub(), &Stub::FailWorkflowTask, fail, &ignored);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_EQ(s.error_message(), "cause has unknown value 999 (not a WorkflowTaskFailedCause)");
  ASSERT_TRUE(alive(server.stub())) << "one bad enum value must not kill the server";

  auto reuse = start_request("wf-2");
  reuse.set_workflow_id_reuse_policy(static_cast<v1::WorkflowIdReusePolicy>(42));
  s = call(server.stub(), &Stub::StartWorkflow, reuse, &started);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "workflow_id_reuse_policy has unknown value 42 (not a WorkflowIdReusePolicy)");

  v1::Command odd = finish("x");
  odd.set_command_type(static_cast<v1::CommandType>(77));
  s = complete(server.stub(), task.task_token(), {odd});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "commands[0].command_type has unknown value 77 (not a CommandType)");
  ASSERT_TRUE(complete(server.stub(), task.task_token(), {finish("done")}).ok()) << "nothing was applied";
}

TEST(HostileInput, ACommandWhoseTypeDisagreesWithItsAttributesIsRefused) {
  TempDir dir;
  Server server(dir.file("mismatch.db"));
  v1::StartWorkflowResponse started;
  ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("wf"), &started).ok());
  auto task = poll_workflow(server.stub());
  v1::Command timer_with_activity = schedule("a");
  timer_with_activity.set_command_type(v1::COMMAND_TYPE_START_TIMER);
  grpc::Status s = complete(server.stub(), task.task_token(), {timer_with_activity});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("command_type does not match its attributes (schedule_activity_task)"),
            std::string::npos)
      << s.error_message();
  ASSERT_TRUE(complete(server.stub(), task.task_token(), {}).ok());
  EXPECT_EQ(describe(server.stub(), "wf").pending_activities_size(), 0) << "no activity was recorded";
}

TEST(HostileInput, DurationsAndTimestampsOutOfRangeAreRefusedNamingTheField) {
  TempDir dir;
  Server server(dir.file("durations.db"));
  v1::StartWorkflowResponse started;
  auto huge = start_request("huge");
  huge.mutable_workflow_execution_timeout()->set_seconds(18'446'744'074);  // 2^64 ns: wraps when multiplied
  grpc::Status s = call(server.stub(), &Stub::StartWorkflow, huge, &started);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "workflow_execution_timeout is 18446744074 s, more than the 3162240000 s (100 years) allowed");

  auto nanos = start_request("nanos");
  nanos.mutable_workflow_run_timeout()->set_nanos(2'000'000'000);
  s = call(server.stub(), &Stub::StartWorkflow, nanos, &started);
  EXPECT_EQ(s.error_message(), "workflow_run_timeout.nanos must be below 1,000,000,000");

  auto negative = start_request("negative");
  negative.mutable_workflow_task_timeout()->set_nanos(-1);
  s = call(server.stub(), &Stub::StartWorkflow, negative, &started);
  EXPECT_EQ(s.error_message(), "workflow_task_timeout must not be negative");

  ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("timer"), &started).ok());
  auto task = poll_workflow(server.stub());
  v1::Command timer;
  timer.set_command_type(v1::COMMAND_TYPE_START_TIMER);
  timer.mutable_start_timer()->set_timer_id("t");
  timer.mutable_start_timer()->mutable_start_to_fire_timeout()->set_seconds(18'446'744'074);
  s = complete(server.stub(), task.task_token(), {timer});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("commands[0].start_timer.start_to_fire_timeout is 18446744074 s"), std::string::npos)
      << s.error_message();
  EXPECT_EQ(describe(server.stub(), "timer").info().status(), v1::WORKFLOW_EXECUTION_STATUS_RUNNING);
  EXPECT_EQ(describe(server.stub(), "huge").info().status(), v1::WORKFLOW_EXECUTION_STATUS_UNSPECIFIED)
      << "the refused start left nothing behind";
}

TEST(HostileInput, OverlongIdentifiersAreRefusedAndOverlongTextIsCut) {
  TempDir dir;
  Server server(dir.file("strings.db"));
  v1::StartWorkflowResponse started;
  auto big_identity = start_request("identity");
  big_identity.set_identity(std::string(1 << 20, 'i'));
  grpc::Status s = call(server.stub(), &Stub::StartWorkflow, big_identity, &started);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "identity is 1048576 bytes, more than 1000");
  auto big_request_id = start_request("request-id");
  big_request_id.set_request_id(std::string(5000, 'r'));
  s = call(server.stub(), &Stub::StartWorkflow, big_request_id, &started);
  EXPECT_EQ(s.error_message(), "request_id is 5000 bytes, more than 1000");

  ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("reason"), &started).ok());
  v1::TerminateWorkflowRequest terminate;
  terminate.mutable_workflow_execution()->set_workflow_id("reason");
  terminate.set_reason(std::string(1 << 20, 'x'));
  v1::TerminateWorkflowResponse ignored;
  ASSERT_TRUE(call(server.stub(), &Stub::TerminateWorkflow, terminate, &ignored).ok());
  v1::GetHistoryRequest h;
  h.mutable_workflow_execution()->set_workflow_id("reason");
  v1::GetHistoryResponse history;
  ASSERT_TRUE(call(server.stub(), &Stub::GetHistory, h, &history).ok());
  const std::string& reason =
      history.history().events(history.history().events_size() - 1).workflow_execution_terminated().reason();
  EXPECT_LT(reason.size(), 33u * 1024);
  EXPECT_NE(reason.find("(cut by the server)"), std::string::npos);
}

TEST(HostileInput, ADeepFailureChainIsCutSoTheWorkflowStaysReadable) {
  TempDir dir;
  Server server(dir.file("deep.db"));
  v1::StartWorkflowResponse started;
  ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("deep"), &started).ok());
  auto task = poll_workflow(server.stub());
  ASSERT_TRUE(complete(server.stub(), task.task_token(), {schedule("1")}).ok());
  auto activity = poll_activity(server.stub());
  ASSERT_FALSE(activity.task_token().empty());

  v1::FailActivityRequest fail;
  fail.set_task_token(activity.task_token());
  v1::Failure* f = fail.mutable_failure();
  f->set_message("level 0");
  f->set_non_retryable(true);
  for (int i = 1; i < 100; ++i) {
    f = f->mutable_cause();
    f->set_message("level " + std::to_string(i));
  }
  v1::FailActivityResponse ignored;
  ASSERT_TRUE(call(server.stub(), &Stub::FailActivity, fail, &ignored).ok());

  v1::GetHistoryRequest h;
  h.mutable_workflow_execution()->set_workflow_id("deep");
  v1::GetHistoryResponse history;
  grpc::Status s = call(server.stub(), &Stub::GetHistory, h, &history);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const v1::Failure* stored = nullptr;
  for (const auto& e : history.history().events()) {
    if (e.has_activity_task_failed()) stored = &e.activity_task_failed().failure();
  }
  ASSERT_NE(stored, nullptr);
  int depth = 1;
  while (stored->has_cause()) {
    stored = &stored->cause();
    ++depth;
  }
  EXPECT_EQ(depth, 32);
  EXPECT_EQ(stored->message(), "69 more causes were cut by the server (a failure chain may be 32 deep)");
  describe(server.stub(), "deep", &s);
  EXPECT_TRUE(s.ok()) << s.error_message();
  auto next = poll_workflow(server.stub());
  EXPECT_FALSE(next.task_token().empty()) << "the workflow's next task is delivered";
}

// Rewrites the stored state of the executions whose id starts with `prefix`
// to bytes that do not parse, as a damaged or foreign record would be.
void damage_states(const std::string& db, const std::string& prefix) {
  sqlite3* conn = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &conn), SQLITE_OK);
  const std::string sql = "UPDATE executions SET state = x'ffffffffff' WHERE workflow_id LIKE '" + prefix + "%'";
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(conn, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK) << (error ? error : "");
  EXPECT_GT(sqlite3_changes(conn), 0);
  sqlite3_free(error);
  sqlite3_close(conn);
}

TEST(HostileInput, TimersThatFailForeverDoNotStopTheOthersAndADamagedWorkflowCanBeTerminated) {
  TempDir dir;
  const std::string db = dir.file("poison.db");
  constexpr int kPoisoned = 300;  // more than the timer loop's window of 256 due rows
  {
    Server server(db);
    for (int i = 0; i < kPoisoned; ++i) {
      auto r = start_request("poison-" + std::to_string(i));
      r.mutable_workflow_run_timeout()->set_seconds(1);
      v1::StartWorkflowResponse out;
      ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, r, &out).ok());
    }
    ASSERT_EQ(server.terminate(), 0);
  }
  damage_states(db, "poison-");
  std::this_thread::sleep_for(1s);  // every poisoned run timeout is due
  Server server(db);
  auto healthy = start_request("healthy");
  healthy.mutable_workflow_run_timeout()->set_seconds(1);
  v1::StartWorkflowResponse out;
  ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, healthy, &out).ok());
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  while (describe(server.stub(), "healthy").info().status() == v1::WORKFLOW_EXECUTION_STATUS_RUNNING &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(describe(server.stub(), "healthy").info().status(), v1::WORKFLOW_EXECUTION_STATUS_TIMED_OUT)
      << "the healthy workflow's run timeout fired behind the failing timers";

  grpc::Status s;
  describe(server.stub(), "poison-7", &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DATA_LOSS);
  v1::TerminateWorkflowRequest terminate;
  terminate.mutable_workflow_execution()->set_workflow_id("poison-7");
  terminate.set_reason("damaged");
  v1::TerminateWorkflowResponse ignored;
  s = call(server.stub(), &Stub::TerminateWorkflow, terminate, &ignored);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(describe(server.stub(), "poison-7").info().status(), v1::WORKFLOW_EXECUTION_STATUS_TERMINATED);
  ASSERT_TRUE(alive(server.stub()));
}

// A workflow retry policy is checked as an activity's is, wherever it is
// asked for (workflow_retry_test has what a valid one does).
TEST(HostileInput, AnInvalidWorkflowRetryPolicyIsRefusedNamingTheField) {
  TempDir dir;
  Server server(dir.file("retry.db"));
  auto start = start_request("retried");
  start.mutable_retry_policy()->set_backoff_coefficient(0.5);
  v1::StartWorkflowResponse started;
  grpc::Status s = call(server.stub(), &Stub::StartWorkflow, start, &started);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("retry_policy.backoff_coefficient must be at least 1"), std::string::npos)
      << s.error_message();
  start.mutable_retry_policy()->set_backoff_coefficient(2);
  start.mutable_retry_policy()->mutable_initial_interval()->set_seconds(10);
  start.mutable_retry_policy()->mutable_maximum_interval()->set_seconds(5);
  s = call(server.stub(), &Stub::StartWorkflow, start, &started);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("retry_policy.maximum_interval must not be less than initial_interval"),
            std::string::npos)
      << s.error_message();

  ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("parent"), &started).ok());
  auto task = poll_workflow(server.stub());
  v1::Command child;
  child.set_command_type(v1::COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION);
  child.mutable_start_child_workflow_execution()->set_workflow_id("kid");
  child.mutable_start_child_workflow_execution()->mutable_workflow_type()->set_name("hello");
  child.mutable_start_child_workflow_execution()->mutable_retry_policy()->set_maximum_attempts(-3);
  s = complete(server.stub(), task.task_token(), {child});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("START_CHILD_WORKFLOW_EXECUTION): retry_policy.maximum_attempts must not be "
                                   "negative"),
            std::string::npos)
      << s.error_message();
}

int rows_of_closed_runs(const std::string& db, const std::string& table) {
  sqlite3* conn = nullptr;
  EXPECT_EQ(sqlite3_open(db.c_str(), &conn), SQLITE_OK);
  const std::string sql = "SELECT count(*) FROM " + table +
                          " t JOIN executions e USING (namespace, workflow_id, run_id) WHERE e.status != " +
                          std::to_string(v1::WORKFLOW_EXECUTION_STATUS_RUNNING);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(conn, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(conn);
  EXPECT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  const int n = sqlite3_column_int(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(conn);
  return n;
}

// A run that closes with work pending (an activity waiting for a worker, a
// timer, its timeouts) leaves no task or timer rows behind for every later
// start to load and find stale.
TEST(HostileInput, AClosedRunLeavesNoTaskOrTimerRowsBehind) {
  TempDir dir;
  const std::string db = dir.file("closed.db");
  {
    Server server(db);
    for (int i = 0; i < 20; ++i) {
      const std::string id = "busy-" + std::to_string(i);
      v1::StartWorkflowResponse started;
      ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request(id), &started).ok());
      auto task = poll_workflow(server.stub());
      v1::Command timer;
      timer.set_command_type(v1::COMMAND_TYPE_START_TIMER);
      timer.mutable_start_timer()->set_timer_id("t");
      timer.mutable_start_timer()->mutable_start_to_fire_timeout()->set_seconds(3600);
      ASSERT_TRUE(complete(server.stub(), task.task_token(), {schedule("1"), timer}).ok());
      v1::TerminateWorkflowRequest end;
      end.mutable_workflow_execution()->set_workflow_id(id);
      v1::TerminateWorkflowResponse ended;
      ASSERT_TRUE(call(server.stub(), &Stub::TerminateWorkflow, end, &ended).ok());
    }
    ASSERT_EQ(server.terminate(), 0);
  }
  EXPECT_EQ(rows_of_closed_runs(db, "tasks"), 0);
  EXPECT_EQ(rows_of_closed_runs(db, "timers"), 0);
}

}  // namespace
}  // namespace reprise
