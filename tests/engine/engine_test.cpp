// The engine in process, on a real SQLite store, driven through its
// WorkflowService-shaped API the way a worker and a client would.
#include <unistd.h>

#include <cstdio>

#include "../captured_stderr.hpp"
#include "engine_fixture.hpp"

namespace reprise::engine {
namespace {

TEST_F(EngineTest, HelloWorkflowEndToEndWithAResultLongPoll) {
  auto started = start("hello-1");
  ASSERT_TRUE(started.is_ok()) << started.status().to_string();
  EXPECT_TRUE(started->started());

  // A client waits for the close event before the worker has done anything.
  v1::GetHistoryRequest wait;
  wait.mutable_workflow_execution()->set_workflow_id("hello-1");
  wait.set_wait_new_event(true);
  wait.set_close_event_only(true);
  wait.mutable_wait_timeout()->set_seconds(10);
  std::promise<Result<v1::GetHistoryResponse>> result;
  engine_->get_history(wait, [&](Result<v1::GetHistoryResponse> r) { result.set_value(std::move(r)); });

  auto first = poll_workflow();
  EXPECT_EQ(first.workflow_type().name(), "hello");
  EXPECT_EQ(first.history().events_size(), 3);
  EXPECT_EQ(first.history().events(0).workflow_execution_started().input().payloads(0).data(), "world");
  run_hello_worker_from(first);

  auto closed = result.get_future().get();
  ASSERT_TRUE(closed.is_ok()) << closed.status().to_string();
  ASSERT_EQ(closed->history().events_size(), 1);
  EXPECT_EQ(closed->history().events(0).workflow_execution_completed().result().payloads(0).data(), "Hello, world!");

  v1::DescribeWorkflowRequest describe;
  describe.mutable_workflow_execution()->set_workflow_id("hello-1");
  auto d = call(&Engine::describe_workflow, describe);
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->info().status(), v1::WORKFLOW_EXECUTION_STATUS_COMPLETED);
  EXPECT_EQ(d->info().history_length(), 11);
}

TEST_F(EngineTest, ACanceledPollAnswersAtOnceAndLeavesTasksToOthers) {
  auto ticket = std::make_shared<PollTicket>();
  std::promise<Result<v1::PollWorkflowTaskResponse>> gone;
  v1::PollWorkflowTaskRequest r;
  r.mutable_task_queue()->set_name("greetings");
  engine_->poll_workflow_task(
      r, [&](Result<v1::PollWorkflowTaskResponse> out) { gone.set_value(std::move(out)); }, ticket);
  ticket->cancel();  // the client disconnected
  auto answer = gone.get_future();
  ASSERT_EQ(answer.wait_for(1s), std::future_status::ready);
  EXPECT_TRUE(answer.get()->task_token().empty());

  ASSERT_TRUE(start("after-cancel").is_ok());
  EXPECT_FALSE(poll_workflow().task_token().empty()) << "the task went to a live poller";

  auto late = std::make_shared<PollTicket>();
  late->cancel();
  ASSERT_TRUE(start("after-cancel-2").is_ok());
  EXPECT_TRUE(call(&Engine::poll_workflow_task, r, late)->task_token().empty()) << "canceled before it polled";
  EXPECT_FALSE(poll_workflow().task_token().empty()) << "and the task stayed queued";
}

TEST_F(EngineTest, HistoryWaitsThatEndLeaveNothingParked) {
  ASSERT_TRUE(start("idle-1").is_ok());
  v1::GetHistoryRequest wait;
  wait.mutable_workflow_execution()->set_workflow_id("idle-1");
  wait.set_wait_new_event(true);
  wait.set_close_event_only(true);
  wait.mutable_wait_timeout()->set_nanos(100'000'000);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(call(&Engine::get_history, wait)->history().events_size(), 0);
  EXPECT_EQ(engine_->parked_history_waits(), 0u) << "timed-out waits took their watchers with them";

  auto ticket = std::make_shared<PollTicket>();
  wait.mutable_wait_timeout()->set_seconds(30);
  std::promise<Result<v1::GetHistoryResponse>> gone;
  engine_->get_history(
      wait, [&](Result<v1::GetHistoryResponse> r) { gone.set_value(std::move(r)); }, ticket);
  // It parks on the read pool, after get_history returned.
  for (int i = 0; i < 500 && engine_->parked_history_waits() == 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(engine_->parked_history_waits(), 1u);
  ticket->cancel();  // the client went away
  EXPECT_EQ(gone.get_future().wait_for(1s), std::future_status::ready);
  EXPECT_EQ(engine_->parked_history_waits(), 0u);
}

TEST_F(EngineTest, PollsReturnEmptyWhenNothingArrives) {
  auto task = poll_workflow();
  EXPECT_TRUE(task.task_token().empty());
}

TEST_F(EngineTest, StartIsIdempotentAndHonoursTheReusePolicy) {
  auto first = start("order-1", "req-A");
  ASSERT_TRUE(first.is_ok());
  auto retried = start("order-1", "req-A");
  ASSERT_TRUE(retried.is_ok());
  EXPECT_FALSE(retried->started());
  EXPECT_EQ(retried->run_id(), first->run_id());
  auto duplicate = start("order-1", "req-B");
  EXPECT_EQ(duplicate.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(duplicate.status().message(), "workflow id 'order-1' is already running as run " + first->run_id());

  v1::TerminateWorkflowRequest stop;
  stop.mutable_workflow_execution()->set_workflow_id("order-1");
  stop.set_reason("test");
  ASSERT_TRUE(call(&Engine::terminate_workflow, stop).is_ok());
  EXPECT_EQ(start("order-1", "req-C", v1::WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE).status().code(),
            StatusCode::kAlreadyExists);
  auto again = start("order-1", "req-D", v1::WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY);
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_NE(again->run_id(), first->run_id());
}

TEST_F(EngineTest, BadRequestsNameTheField) {
  EXPECT_EQ(start("").status().message(), "workflow_id is required");
  EXPECT_EQ(start(std::string(2000, 'x')).status().message(), "workflow_id is 2000 bytes, more than 1000");
  v1::StartWorkflowRequest other_namespace;
  other_namespace.set_namespace_("prod");
  other_namespace.set_workflow_id("x");
  EXPECT_EQ(call(&Engine::start_workflow, other_namespace).status().code(), StatusCode::kNotFound);
  v1::CompleteWorkflowTaskRequest forged;
  forged.set_task_token("garbage");
  EXPECT_EQ(call(&Engine::complete_workflow_task, forged).status().message(), "task_token is malformed");

  ASSERT_TRUE(start("closed-1").is_ok());
  v1::TerminateWorkflowRequest stop;
  stop.mutable_workflow_execution()->set_workflow_id("closed-1");
  ASSERT_TRUE(call(&Engine::terminate_workflow, stop).is_ok());
  v1::SignalWorkflowRequest late;
  late.mutable_workflow_execution()->set_workflow_id("closed-1");
  late.set_signal_name("approve");
  auto r = call(&Engine::signal_workflow, late);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("is closed"), std::string::npos);
}

// A retry policy in a command is checked as a start's is, wherever it is
// given: the completion is refused naming the command and the field, and
// nothing of it is written (the run goes on, with no activity, child or next
// run).
TEST_F(EngineTest, AnInvalidRetryPolicyInAnActivityChildOrContinueAsNewCommandIsRefusedNamingTheField) {
  v1::Command activity = schedule_greet();
  activity.mutable_schedule_activity_task()->mutable_retry_policy()->set_backoff_coefficient(0.5);

  v1::Command child;
  child.set_command_type(v1::COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION);
  child.mutable_start_child_workflow_execution()->set_workflow_id("kid");
  child.mutable_start_child_workflow_execution()->mutable_workflow_type()->set_name("hello");
  auto* child_policy = child.mutable_start_child_workflow_execution()->mutable_retry_policy();
  child_policy->mutable_initial_interval()->set_seconds(10);
  child_policy->mutable_maximum_interval()->set_seconds(5);

  v1::Command next;
  next.set_command_type(v1::COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION);
  next.mutable_continue_as_new_workflow_execution()->mutable_retry_policy()->set_maximum_attempts(-1);

  const std::vector<std::tuple<std::string, v1::Command, std::string>> cases = {
      {"bad-activity-policy", activity,
       "command 0 (schedule activity '1'): retry_policy.backoff_coefficient must be at least 1"},
      {"bad-child-policy", child,
       "command 0 (START_CHILD_WORKFLOW_EXECUTION): retry_policy.maximum_interval must not be less than "
       "initial_interval"},
      {"bad-next-run-policy", next,
       "command 0 (CONTINUE_AS_NEW_WORKFLOW_EXECUTION): retry_policy.maximum_attempts must not be negative"},
  };
  for (const auto& [id, command, expected] : cases) {
    SCOPED_TRACE(id);
    ASSERT_TRUE(start(id).is_ok());
    const int64_t before = *describe_length(id);
    Status refused = complete(poll_workflow().task_token(), {command});
    EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.to_string();
    EXPECT_NE(refused.message().find(expected), std::string::npos) << refused.to_string();

    v1::DescribeWorkflowRequest d;
    d.mutable_workflow_execution()->set_workflow_id(id);
    auto described = call(&Engine::describe_workflow, d);
    ASSERT_TRUE(described.is_ok()) << described.status().to_string();
    EXPECT_EQ(described->info().status(), v1::WORKFLOW_EXECUTION_STATUS_RUNNING) << "no next run";
    EXPECT_EQ(described->pending_activities_size(), 0);
    EXPECT_EQ(described->pending_children_size(), 0);
    EXPECT_LE(described->info().history_length(), before + 2) << "at most the failed task, no command's event";
  }
}

// What an operator looks for in the server's log: a workflow's start, each
// workflow-task failure with its message, and its close with the status.
TEST_F(EngineTest, StartsWorkflowTaskFailuresAndClosesAreLogged) {
  log::set_format(log::Format::kLogfmt);
  log::set_level(log::Level::kInfo);
  const std::string logged = ::reprise::testing::captured_stderr_of([&] {
    ASSERT_TRUE(start("logged-1").is_ok());
    v1::FailWorkflowTaskRequest failed;
    failed.set_task_token(poll_workflow().task_token());
    failed.mutable_failure()->set_message("cart is empty");
    ASSERT_TRUE(call(&Engine::fail_workflow_task, failed).is_ok());
    v1::TerminateWorkflowRequest stop;
    stop.mutable_workflow_execution()->set_workflow_id("logged-1");
    ASSERT_TRUE(call(&Engine::terminate_workflow, stop).is_ok());
  });
  log::set_level(log::Level::kWarn);
  EXPECT_NE(logged.find("level=info msg=\"workflow started\" workflow_id=logged-1 "), std::string::npos) << logged;
  const size_t failure = logged.find("level=warn msg=\"workflow task failed\" workflow_id=logged-1 ");
  ASSERT_NE(failure, std::string::npos) << logged;
  EXPECT_NE(logged.find("message=\"cart is empty\"", failure), std::string::npos) << logged;
  const size_t closed = logged.find("level=info msg=\"workflow closed\" workflow_id=logged-1 ");
  ASSERT_NE(closed, std::string::npos) << logged;
  EXPECT_NE(logged.find("status=TERMINATED", closed), std::string::npos) << logged;
}

TEST_F(EngineTest, SignalsReachTheNextWorkflowTask) {
  ASSERT_TRUE(start("approval-1").is_ok());
  auto first = poll_workflow();
  v1::SignalWorkflowRequest signal;
  signal.mutable_workflow_execution()->set_workflow_id("approval-1");
  signal.set_signal_name("approve");
  signal.mutable_input()->add_payloads()->set_data("yes");
  ASSERT_TRUE(call(&Engine::signal_workflow, signal).is_ok());  // while the task runs: buffered
  ASSERT_TRUE(complete(first.task_token(), {}).is_ok());
  auto second = poll_workflow();
  ASSERT_FALSE(second.task_token().empty());
  const auto& events = second.history().events();
  bool seen = false;
  for (const auto& e : events)
    seen |= e.has_workflow_execution_signaled() && e.workflow_execution_signaled().input().payloads(0).data() == "yes";
  EXPECT_TRUE(seen);
}

TEST_F(EngineTest, SignalWithStartStartsOrSignals) {
  v1::SignalWithStartRequest r;
  r.mutable_start()->set_workflow_id("cart-7");
  r.mutable_start()->mutable_workflow_type()->set_name("cart");
  r.mutable_start()->mutable_task_queue()->set_name("greetings");
  r.set_signal_name("add_item");
  r.mutable_signal_input()->add_payloads()->set_data("apple");
  auto first = call(&Engine::signal_with_start, r);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_TRUE(first->started());

  r.mutable_signal_input()->mutable_payloads(0)->set_data("pear");
  auto second = call(&Engine::signal_with_start, r);
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  EXPECT_FALSE(second->started()) << "the run was open: signaled, not started again";
  EXPECT_EQ(second->run_id(), first->run_id());

  auto task = poll_workflow();
  const auto& events = task.history().events();
  ASSERT_GE(events.size(), 5);
  EXPECT_EQ(events[0].event_type(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_STARTED);
  EXPECT_EQ(events[1].workflow_execution_signaled().input().payloads(0).data(), "apple")
      << "the signal is the run's first event after the start";
  EXPECT_EQ(events[2].event_type(), v1::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED);
  EXPECT_EQ(events[3].workflow_execution_signaled().input().payloads(0).data(), "pear");

  r.clear_signal_name();
  EXPECT_EQ(call(&Engine::signal_with_start, r).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(EngineTest, PendingTasksAndTimersSurviveARestart) {
  ASSERT_TRUE(start("durable-1").is_ok());
  restart();  // the queued workflow task is rebuilt from the store
  auto task = poll_workflow();
  ASSERT_FALSE(task.task_token().empty());
  v1::Command timer;
  timer.set_command_type(v1::COMMAND_TYPE_START_TIMER);
  timer.mutable_start_timer()->set_timer_id("nap");
  timer.mutable_start_timer()->mutable_start_to_fire_timeout()->set_seconds(3600);
  ASSERT_TRUE(complete(task.task_token(), {timer}).is_ok());
  restart();
  clock_.advance(3600s);  // the timer came due while the server was down
  engine_->check_timers();
  auto woken = poll_workflow();
  ASSERT_FALSE(woken.task_token().empty()) << "the timer fired after the restart";
  const auto& events = woken.history().events();
  EXPECT_EQ(events[events.size() - 3].event_type(), v1::EVENT_TYPE_TIMER_FIRED);
}

TEST_F(EngineTest, StaleTimersAreDroppedWithoutRewritingTheExecution) {
  // Every start committed before its hand-out: with its timeout's row.
  restart([](EngineOptions& o) { o.max_held_start = 0ms; });
  ASSERT_TRUE(start("quick-1").is_ok());
  auto task = poll_workflow();  // arms a 10 s workflow-task timeout
  // The workflow waits on: the timeout's row stays, stale (a run that closed
  // would have dropped it with its close).
  ASSERT_TRUE(complete(task.task_token(), {}).is_ok());
  const auto key = ExecutionKey{"default", "quick-1", task.workflow_execution().run_id()};
  const int64_t version = store_->get_execution(key)->version;
  ASSERT_EQ(store_->due_timers(from_unix_nanos(INT64_MAX), 10)->size(), 1u);

  clock_.advance(10s);
  engine_->check_timers();
  for (int i = 0; i < 500 && !store_->due_timers(from_unix_nanos(INT64_MAX), 10)->empty(); ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(store_->due_timers(from_unix_nanos(INT64_MAX), 10)->empty()) << "the stale row is gone";
  EXPECT_EQ(store_->get_execution(key)->version, version) << "and the execution was not rewritten";
}

// A held start commits with its task's completion, which makes the task's
// timeout stale in the same transition: no row is written for it, and
// none is left to drop when it would have come due.
TEST_F(EngineTest, AHeldStartsTimeoutIsNotWrittenWhenItsTaskCompletesInTheSameCommit) {
  ASSERT_TRUE(start("quick-2").is_ok());
  auto task = poll_workflow();
  ASSERT_TRUE(complete(task.task_token(), {}).is_ok());  // the workflow waits on
  EXPECT_TRUE(store_->due_timers(from_unix_nanos(INT64_MAX), 10)->empty());
}

// A workflow at --max-pending-activities: the task that would schedule one
// more is refused RESOURCE_EXHAUSTED, having written nothing; within the
// limit it goes through.
TEST_F(EngineTest, PendingActivitiesAreLimited) {
  restart([](EngineOptions& o) { o.config.max_pending_activities = 3; });
  ASSERT_TRUE(start("busy-bee").is_ok());
  auto task = poll_workflow();
  auto schedule = [](const std::string& id) {
    v1::Command c = schedule_greet();
    c.mutable_schedule_activity_task()->set_activity_id(id);
    return c;
  };
  auto before = describe_length("busy-bee");
  ASSERT_TRUE(before.is_ok());
  const Status s = complete(task.task_token(), {schedule("1"), schedule("2"), schedule("3"), schedule("4")});
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
  EXPECT_NE(s.message().find("already has 3 pending activities"), std::string::npos) << s.to_string();
  auto after = describe_length("busy-bee");
  ASSERT_TRUE(after.is_ok());
  EXPECT_EQ(*after, *before) << "a refused task writes nothing";
  ASSERT_TRUE(complete(task.task_token(), {schedule("1"), schedule("2"), schedule("3")}).is_ok());
}

TEST_F(EngineTest, ListsWorkflows) {
  ASSERT_TRUE(start("a").is_ok());
  ASSERT_TRUE(start("b").is_ok());
  v1::ListWorkflowsRequest list;
  list.set_status(v1::WORKFLOW_EXECUTION_STATUS_RUNNING);
  auto r = call(&Engine::list_workflows, list);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->executions_size(), 2);
}

}  // namespace
}  // namespace reprise::engine
