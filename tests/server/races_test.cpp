// Answers that race what they answer, against a real server process: a
// query answer from before a restart, an activity whose cancellation was
// requested when it fails or times out, a cancel that crosses the event it
// cancels.
#include <future>
#include <thread>

#include "server_harness.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

grpc::Status answer(Stub& stub, const std::string& token, const std::string& query_key, const std::string& value) {
  v1::CompleteWorkflowTaskRequest r;
  r.set_task_token(token);
  (*r.mutable_query_results())[query_key].mutable_answer()->add_payloads()->set_data(value);
  v1::CompleteWorkflowTaskResponse ignored;
  return call(stub, &Stub::CompleteWorkflowTask, r, &ignored);
}

std::future<std::pair<grpc::Status, std::string>> ask(Stub& stub, const std::string& workflow_id, int timeout_ms) {
  return std::async(std::launch::async, [&stub, workflow_id, timeout_ms] {
    v1::QueryWorkflowRequest q;
    q.mutable_workflow_execution()->set_workflow_id(workflow_id);
    q.set_query_type("status");
    q.mutable_timeout()->set_seconds(timeout_ms / 1000);
    q.mutable_timeout()->set_nanos((timeout_ms % 1000) * 1'000'000);
    v1::QueryWorkflowResponse out;
    grpc::Status s = call(stub, &Stub::QueryWorkflow, q, &out);
    return std::make_pair(s, out.result().payloads_size() > 0 ? out.result().payloads(0).data() : std::string());
  });
}

// Query ids restart in every server process: a worker still holding a query
// token from before a restart must not answer another workflow's query.
TEST(Races, AQueryTokenFromBeforeARestartAnswersNothing) {
  TempDir dir;
  const std::string db = dir.file("queries.db");
  std::string old_token, old_key;
  {
    Server server(db);
    v1::StartWorkflowResponse started;
    ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("wf-a"), &started).ok());
    ASSERT_TRUE(complete(server.stub(), next_workflow_task(server.stub()).task_token(), {}).ok());
    auto asked = ask(server.stub(), "wf-a", 500);
    auto task = next_workflow_task(server.stub());
    ASSERT_EQ(task.queries_size(), 1);
    ASSERT_EQ(task.workflow_execution().workflow_id(), "wf-a");
    old_token = task.task_token();
    old_key = task.queries().begin()->first;
    EXPECT_EQ(asked.get().first.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
    server.kill9();
  }
  Server server(db);
  v1::StartWorkflowResponse started;
  ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("wf-b"), &started).ok());
  ASSERT_TRUE(complete(server.stub(), next_workflow_task(server.stub()).task_token(), {}).ok());
  auto asked = ask(server.stub(), "wf-b", 5000);
  auto task = next_workflow_task(server.stub());
  ASSERT_EQ(task.queries_size(), 1);
  ASSERT_EQ(task.queries().begin()->first, old_key) << "the new process reuses the query id: the race is real";

  grpc::Status late = answer(server.stub(), old_token, old_key, "state of wf-a");
  EXPECT_EQ(late.error_code(), grpc::StatusCode::NOT_FOUND) << late.error_message();
  ASSERT_TRUE(answer(server.stub(), task.task_token(), old_key, "state of wf-b").ok());
  auto [status, value] = asked.get();
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(value, "state of wf-b");
}

v1::Command cancel_activity(int64_t scheduled_event_id) {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK);
  c.mutable_request_cancel_activity_task()->set_scheduled_event_id(scheduled_event_id);
  return c;
}

// Once the workflow asked an activity to stop, a timeout (its worker is
// gone and never heard of the request) or a failure closes it instead of
// starting another attempt that nobody wants.
TEST(Races, AnActivityAskedToCancelIsNotRetried) {
  TempDir dir;
  Server server(dir.file("cancel-retry.db"));
  for (const char* how : {"times-out", "fails"}) {
    SCOPED_TRACE(how);
    const std::string id = std::string("wf-") + how;
    v1::StartWorkflowResponse started;
    ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request(id), &started).ok());
    v1::Command work = schedule("1");
    work.mutable_schedule_activity_task()->mutable_start_to_close_timeout()->set_seconds(1);
    work.mutable_schedule_activity_task()->mutable_retry_policy()->mutable_initial_interval()->set_nanos(100'000'000);
    ASSERT_TRUE(complete(server.stub(), next_workflow_task(server.stub()).task_token(), {work}).ok());
    auto activity = next_activity_task(server.stub());
    ASSERT_FALSE(activity.task_token().empty());
    const int64_t scheduled = 5;  // started, scheduled, wf task scheduled/started/completed, then the activity
    ASSERT_TRUE(poke(server.stub(), id).ok());  // wakes the workflow, which cancels the activity
    auto task = next_workflow_task(server.stub());
    ASSERT_TRUE(complete(server.stub(), task.task_token(), {cancel_activity(scheduled)}).ok());
    if (std::string(how) == "fails") {
      v1::FailActivityRequest failed;
      failed.set_task_token(activity.task_token());
      failed.mutable_failure()->set_message("gave up");
      v1::FailActivityResponse ignored;
      ASSERT_TRUE(call(server.stub(), &Stub::FailActivity, failed, &ignored).ok());
    }
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    v1::GetHistoryResponse history;
    do {
      std::this_thread::sleep_for(100ms);
      history = history_of(server.stub(), id);
    } while (count_events(history, v1::EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT) +
                     count_events(history, v1::EVENT_TYPE_ACTIVITY_TASK_FAILED) ==
                 0 &&
             std::chrono::steady_clock::now() < deadline);
    EXPECT_EQ(count_events(history, std::string(how) == "fails" ? v1::EVENT_TYPE_ACTIVITY_TASK_FAILED
                                                                : v1::EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT),
              1)
        << "the activity closed, and the workflow hears of it";
    v1::DescribeWorkflowRequest d;
    d.mutable_workflow_execution()->set_workflow_id(id);
    v1::DescribeWorkflowResponse described;
    ASSERT_TRUE(call(server.stub(), &Stub::DescribeWorkflow, d, &described).ok());
    EXPECT_EQ(described.pending_activities_size(), 0) << "no new attempt waits for a worker";
    v1::TerminateWorkflowRequest end;
    end.mutable_workflow_execution()->set_workflow_id(id);
    v1::TerminateWorkflowResponse ended;
    ASSERT_TRUE(call(server.stub(), &Stub::TerminateWorkflow, end, &ended).ok());
  }
}

// The workflow cancels a timer (or an activity) whose fire (or completion)
// arrived while its task ran and which it has not seen: the cancel is
// accepted at once, not refused into a workflow-task timeout.
TEST(Races, ACancelThatCrossesTheEventItCancelsIsAccepted) {
  TempDir dir;
  Server server(dir.file("cancel-race.db"));
  v1::StartWorkflowResponse started;
  ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("crossed"), &started).ok());
  v1::Command timer;
  timer.set_command_type(v1::COMMAND_TYPE_START_TIMER);
  timer.mutable_start_timer()->set_timer_id("t");
  // Long enough for the task below to be handed out first even on a loaded
  // machine; the test then waits for it to fire while the task runs.
  timer.mutable_start_timer()->mutable_start_to_fire_timeout()->set_seconds(3);
  ASSERT_TRUE(complete(server.stub(), next_workflow_task(server.stub()).task_token(), {timer, schedule("1")}).ok());
  auto activity = next_activity_task(server.stub());
  ASSERT_FALSE(activity.task_token().empty());

  ASSERT_TRUE(poke(server.stub(), "crossed").ok());
  auto task = next_workflow_task(server.stub());  // running while the timer fires and the activity completes
  for (const auto& e : task.history().events()) ASSERT_FALSE(e.has_timer_fired()) << "the timer fired too early";
  std::this_thread::sleep_for(4s);
  v1::CompleteActivityRequest done;
  done.set_task_token(activity.task_token());
  v1::CompleteActivityResponse ignored;
  ASSERT_TRUE(call(server.stub(), &Stub::CompleteActivity, done, &ignored).ok());
  v1::Command cancel_timer;
  cancel_timer.set_command_type(v1::COMMAND_TYPE_CANCEL_TIMER);
  cancel_timer.mutable_cancel_timer()->set_timer_id("t");
  grpc::Status s = complete(server.stub(), task.task_token(), {cancel_timer, cancel_activity(6)});
  ASSERT_TRUE(s.ok()) << s.error_message();

  auto history = history_of(server.stub(), "crossed");
  EXPECT_EQ(count_events(history, v1::EVENT_TYPE_TIMER_CANCELED), 1);
  EXPECT_EQ(count_events(history, v1::EVENT_TYPE_TIMER_FIRED), 0) << "the fire the workflow canceled is dropped";
  EXPECT_EQ(count_events(history, v1::EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED), 1);
  EXPECT_EQ(count_events(history, v1::EVENT_TYPE_ACTIVITY_TASK_COMPLETED), 1) << "the outcome follows the request";
  auto next = next_workflow_task(server.stub());
  EXPECT_FALSE(next.task_token().empty()) << "the workflow goes on at once to see the outcome";
  std::vector<std::string> counted;
  for (const auto& e : history.history().events()) counted.push_back(v1::EventType_Name(e.event_type()));
  EXPECT_EQ(history.history().events().rbegin()->event_type(), v1::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED)
      << ::testing::PrintToString(counted);
}

// Signals that arrive while a workflow task runs wait for it; the wait is
// bounded, and a signal beyond it is refused (retryable), not stored.
TEST(Races, SignalsBufferedDuringATaskAreBounded) {
  TempDir dir;
  Server server(dir.file("buffered.db"), {"--max-buffered-events", "10", "--max-buffered-bytes", "4096"});
  v1::StartWorkflowResponse started;
  ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("busy"), &started).ok());
  auto task = next_workflow_task(server.stub());  // running: signals now wait for it
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(poke(server.stub(), "busy").ok()) << i;
  grpc::Status refused = poke(server.stub(), "busy");
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.error_message().find("(10 events, 4096 bytes)"), std::string::npos) << refused.error_message();
  ASSERT_TRUE(complete(server.stub(), task.task_token(), {}).ok());
  EXPECT_EQ(count_events(history_of(server.stub(), "busy"), v1::EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED), 10);

  task = next_workflow_task(server.stub());
  v1::SignalWorkflowRequest big;
  big.mutable_workflow_execution()->set_workflow_id("busy");
  big.set_signal_name("big");
  big.mutable_input()->add_payloads()->set_data(std::string(5000, 'x'));
  v1::SignalWorkflowResponse ignored;
  EXPECT_EQ(call(server.stub(), &Stub::SignalWorkflow, big, &ignored).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED)
      << "over the byte limit";
  ASSERT_TRUE(complete(server.stub(), task.task_token(), {}).ok());
  EXPECT_TRUE(poke(server.stub(), "busy").ok()) << "with no task running, signals are written at once";
}

}  // namespace
}  // namespace reprise
