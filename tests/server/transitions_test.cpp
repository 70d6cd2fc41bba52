// Every transition of the execution state machine, driven through
// reprise-server's raw gRPC API by a test client: activity retries with
// backoff and heartbeat details, each activity timeout, workflow-task
// timeouts, signals during a running task, timers, cancellation,
// termination, child workflows, continue-as-new, sticky queues and queries.
// Real time, with timeouts of a few hundred milliseconds.
#include <thread>

#include "server_harness.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

google::protobuf::Duration millis(int ms) {
  google::protobuf::Duration d;
  d.set_seconds(ms / 1000);
  d.set_nanos((ms % 1000) * 1'000'000);
  return d;
}

// A worker and a client in one, on the raw API.
class Client {
 public:
  explicit Client(Server& server) : stub_(server.stub()) {}

  grpc::Status start(v1::StartWorkflowRequest r) {
    v1::StartWorkflowResponse out;
    return call(stub_, &Stub::StartWorkflow, r, &out);
  }
  // Polls (each poll waits up to the server's 500 ms) until a task comes.
  v1::PollWorkflowTaskResponse workflow_task(const std::string& queue = "q", int polls = 10) {
    for (int i = 0; i < polls; ++i) {
      v1::PollWorkflowTaskRequest r;
      r.mutable_task_queue()->set_name(queue);
      v1::PollWorkflowTaskResponse out;
      EXPECT_TRUE(call(stub_, &Stub::PollWorkflowTask, r, &out).ok());
      if (!out.task_token().empty()) return out;
    }
    return {};
  }
  v1::PollActivityTaskResponse activity_task(const std::string& queue = "q", int polls = 10) {
    for (int i = 0; i < polls; ++i) {
      v1::PollActivityTaskRequest r;
      r.mutable_task_queue()->set_name(queue);
      v1::PollActivityTaskResponse out;
      EXPECT_TRUE(call(stub_, &Stub::PollActivityTask, r, &out).ok());
      if (!out.task_token().empty()) return out;
    }
    return {};
  }
  grpc::Status complete(const std::string& token, std::vector<v1::Command> commands,
                        const std::string& sticky_queue = "") {
    v1::CompleteWorkflowTaskRequest r;
    r.set_task_token(token);
    for (auto& c : commands) *r.add_commands() = std::move(c);
    if (!sticky_queue.empty()) r.mutable_sticky_attributes()->mutable_worker_task_queue()->set_name(sticky_queue);
    v1::CompleteWorkflowTaskResponse out;
    return call(stub_, &Stub::CompleteWorkflowTask, r, &out);
  }
  grpc::Status fail_activity(const std::string& token, const std::string& message, bool non_retryable = false) {
    v1::FailActivityRequest r;
    r.set_task_token(token);
    r.mutable_failure()->set_message(message);
    r.mutable_failure()->set_non_retryable(non_retryable);
    v1::FailActivityResponse out;
    return call(stub_, &Stub::FailActivity, r, &out);
  }
  grpc::Status heartbeat(const std::string& token, const std::string& details, bool* cancel_requested = nullptr) {
    v1::HeartbeatActivityRequest r;
    r.set_task_token(token);
    r.mutable_details()->add_payloads()->set_data(details);
    v1::HeartbeatActivityResponse out;
    grpc::Status s = call(stub_, &Stub::HeartbeatActivity, r, &out);
    if (cancel_requested != nullptr) *cancel_requested = out.cancel_requested();
    return s;
  }
  grpc::Status signal(const std::string& id, const std::string& name, const std::string& input) {
    v1::SignalWorkflowRequest r;
    r.mutable_workflow_execution()->set_workflow_id(id);
    r.set_signal_name(name);
    r.mutable_input()->add_payloads()->set_data(input);
    v1::SignalWorkflowResponse out;
    return call(stub_, &Stub::SignalWorkflow, r, &out);
  }
  v1::History history(const std::string& id) {
    v1::GetHistoryRequest r;
    r.mutable_workflow_execution()->set_workflow_id(id);
    v1::GetHistoryResponse out;
    EXPECT_TRUE(call(stub_, &Stub::GetHistory, r, &out).ok());
    return out.history();
  }
  v1::WorkflowExecutionStatus status(const std::string& id) {
    v1::DescribeWorkflowRequest r;
    r.mutable_workflow_execution()->set_workflow_id(id);
    v1::DescribeWorkflowResponse out;
    EXPECT_TRUE(call(stub_, &Stub::DescribeWorkflow, r, &out).ok());
    return out.info().status();
  }
  Stub& stub() { return stub_; }

 private:
  Stub& stub_;
};

std::vector<const v1::HistoryEvent*> events_of(const v1::History& h, v1::EventType type) {
  std::vector<const v1::HistoryEvent*> out;
  for (const auto& e : h.events()) {
    if (e.event_type() == type) out.push_back(&e);
  }
  return out;
}

v1::Command activity(const std::string& id, const std::string& queue, int start_to_close_ms) {
  v1::Command c = schedule(id);
  auto* a = c.mutable_schedule_activity_task();
  a->mutable_task_queue()->set_name(queue);
  *a->mutable_start_to_close_timeout() = millis(start_to_close_ms);
  return c;
}

v1::Command timer(const std::string& id, int ms) {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_START_TIMER);
  c.mutable_start_timer()->set_timer_id(id);
  *c.mutable_start_timer()->mutable_start_to_fire_timeout() = millis(ms);
  return c;
}

class Transitions : public ::testing::Test {
 protected:
  TempDir dir_;
  Server server_{dir_.file("transitions.db"), {"--max-id-length", "64"}};
  Client client_{server_};
};

TEST_F(Transitions, ActivityRetriesBackOffAndCarryHeartbeatDetails) {
  ASSERT_TRUE(client_.start(start_request("retry-1")).ok());
  v1::Command c = activity("charge", "acts", 5000);
  auto* policy = c.mutable_schedule_activity_task()->mutable_retry_policy();
  *policy->mutable_initial_interval() = millis(200);
  policy->set_backoff_coefficient(2.0);
  policy->set_maximum_attempts(3);
  ASSERT_TRUE(client_.complete(client_.workflow_task().task_token(), {c}).ok());

  auto first = client_.activity_task("acts");
  ASSERT_EQ(first.attempt(), 1);
  ASSERT_TRUE(client_.heartbeat(first.task_token(), "page 7").ok());
  // Each backoff runs from when the server handled the failure, which is
  // after the call was sent and before its answer came back (a commit and
  // an answer later, longer than the slack on a loaded machine): measured
  // from the sending, the wait is never shorter than the backoff.
  const auto failed_at = Clock::now();
  ASSERT_TRUE(client_.fail_activity(first.task_token(), "card network down").ok());
  auto second = client_.activity_task("acts");
  EXPECT_GE(Clock::now() - failed_at, 190ms) << "the first retry waits its initial interval";
  EXPECT_EQ(second.attempt(), 2);
  ASSERT_EQ(second.heartbeat_details().payloads_size(), 1);
  EXPECT_EQ(second.heartbeat_details().payloads(0).data(), "page 7") << "progress reaches the next attempt";
  const auto failed_again = Clock::now();
  ASSERT_TRUE(client_.fail_activity(second.task_token(), "still down").ok());
  auto third = client_.activity_task("acts");
  EXPECT_GE(Clock::now() - failed_again, 390ms) << "then twice that";
  EXPECT_EQ(third.attempt(), 3);
  ASSERT_TRUE(client_.fail_activity(third.task_token(), "gave up").ok());  // the last attempt

  auto task = client_.workflow_task();
  const auto failed = events_of(task.history(), v1::EVENT_TYPE_ACTIVITY_TASK_FAILED);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0]->activity_task_failed().failure().message(), "gave up");
  EXPECT_EQ(events_of(task.history(), v1::EVENT_TYPE_ACTIVITY_TASK_STARTED).size(), 1u)
      << "retries do not grow history: one started event, of the last attempt";
  EXPECT_EQ(events_of(task.history(), v1::EVENT_TYPE_ACTIVITY_TASK_STARTED)[0]->activity_task_started().attempt(), 3);
}

TEST_F(Transitions, EachActivityTimeoutFires) {
  ASSERT_TRUE(client_.start(start_request("timeouts-1")).ok());
  v1::Command never_picked = activity("schedule-to-start", "nobody-polls", 5000);
  *never_picked.mutable_schedule_activity_task()->mutable_schedule_to_start_timeout() = millis(300);
  v1::Command overall = activity("schedule-to-close", "slow", 5000);
  *overall.mutable_schedule_activity_task()->mutable_schedule_to_close_timeout() = millis(500);
  v1::Command attempt = activity("start-to-close", "stuck", 300);
  attempt.mutable_schedule_activity_task()->mutable_retry_policy()->set_maximum_attempts(1);
  v1::Command silent = activity("heartbeat", "silent", 10000);
  // Long enough that the heartbeat below, 200 ms and two calls after the
  // start, reaches the server in time on a loaded machine.
  *silent.mutable_schedule_activity_task()->mutable_heartbeat_timeout() = millis(1000);
  silent.mutable_schedule_activity_task()->mutable_retry_policy()->set_maximum_attempts(1);
  ASSERT_TRUE(client_.complete(client_.workflow_task().task_token(), {never_picked, overall, attempt, silent}).ok());

  ASSERT_FALSE(client_.activity_task("slow").task_token().empty());   // taken, never answered
  ASSERT_FALSE(client_.activity_task("stuck").task_token().empty());  // likewise
  auto beating = client_.activity_task("silent");
  std::this_thread::sleep_for(200ms);
  ASSERT_TRUE(client_.heartbeat(beating.task_token(), "alive").ok());  // then goes quiet

  // Until all four have timed out (each due within 1.2 s), however slow the
  // machine. A timeout left unenforced still fails below: its activity times
  // out another way (at its start-to-close timeout, 5 or 10 s) or not at all.
  v1::History h;
  const auto deadline = Clock::now() + 10s;
  do {
    std::this_thread::sleep_for(100ms);
    h = client_.history("timeouts-1");
  } while (events_of(h, v1::EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT).size() < 4 && Clock::now() < deadline);
  std::map<std::string, v1::TimeoutType> timed_out;
  for (const auto* e : events_of(h, v1::EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT)) {
    const auto& t = e->activity_task_timed_out();
    const auto& scheduled = h.events(static_cast<int>(t.scheduled_event_id()) - 1).activity_task_scheduled();
    timed_out[scheduled.activity_id()] = t.failure().timeout_type();
  }
  EXPECT_EQ(timed_out["schedule-to-start"], v1::TIMEOUT_TYPE_SCHEDULE_TO_START);
  EXPECT_EQ(timed_out["schedule-to-close"], v1::TIMEOUT_TYPE_SCHEDULE_TO_CLOSE);
  EXPECT_EQ(timed_out["start-to-close"], v1::TIMEOUT_TYPE_START_TO_CLOSE);
  EXPECT_EQ(timed_out["heartbeat"], v1::TIMEOUT_TYPE_HEARTBEAT);
}

TEST_F(Transitions, AWorkflowTaskThatTimesOutGoesToAnotherWorker) {
  v1::StartWorkflowRequest r = start_request("wft-timeout");
  *r.mutable_workflow_task_timeout() = millis(300);
  ASSERT_TRUE(client_.start(r).ok());
  auto lost = client_.workflow_task();  // this worker hangs
  ASSERT_EQ(lost.attempt(), 1);
  auto retry = client_.workflow_task();
  EXPECT_EQ(retry.attempt(), 2);
  EXPECT_EQ(events_of(retry.history(), v1::EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT).size(), 1u);
  EXPECT_EQ(client_.complete(lost.task_token(), {finish("late")}).error_code(), grpc::StatusCode::NOT_FOUND)
      << "the hung worker's token is stale";
  ASSERT_TRUE(client_.complete(retry.task_token(), {finish("done")}).ok());
  EXPECT_EQ(client_.status("wft-timeout"), v1::WORKFLOW_EXECUTION_STATUS_COMPLETED);
}

TEST_F(Transitions, SignalsDuringARunningTaskArriveInOrderAfterIt) {
  ASSERT_TRUE(client_.start(start_request("signals-1")).ok());
  auto running = client_.workflow_task();
  for (const char* item : {"apple", "pear", "plum"}) ASSERT_TRUE(client_.signal("signals-1", "add", item).ok());
  ASSERT_TRUE(client_.complete(running.task_token(), {}).ok());
  auto next = client_.workflow_task();
  const auto signals = events_of(next.history(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED);
  ASSERT_EQ(signals.size(), 3u);
  EXPECT_EQ(signals[0]->workflow_execution_signaled().input().payloads(0).data(), "apple");
  EXPECT_EQ(signals[2]->workflow_execution_signaled().input().payloads(0).data(), "plum");
  EXPECT_GT(signals[0]->event_id(), events_of(next.history(), v1::EVENT_TYPE_WORKFLOW_TASK_COMPLETED)[0]->event_id());
}

TEST_F(Transitions, TimersFireAndCanceledTimersDoNot) {
  ASSERT_TRUE(client_.start(start_request("timers-1")).ok());
  ASSERT_TRUE(client_.complete(client_.workflow_task().task_token(), {timer("short", 200), timer("long", 60000)}).ok());
  auto woken = client_.workflow_task();
  const auto fired = events_of(woken.history(), v1::EVENT_TYPE_TIMER_FIRED);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0]->timer_fired().timer_id(), "short");
  v1::Command cancel;
  cancel.set_command_type(v1::COMMAND_TYPE_CANCEL_TIMER);
  cancel.mutable_cancel_timer()->set_timer_id("long");
  ASSERT_TRUE(client_.complete(woken.task_token(), {cancel, finish("done")}).ok());
  EXPECT_EQ(events_of(client_.history("timers-1"), v1::EVENT_TYPE_TIMER_CANCELED).size(), 1u);
}

TEST_F(Transitions, CancellationIsTheWorkflowsToHandleAndTerminationIsNot) {
  ASSERT_TRUE(client_.start(start_request("cancel-1")).ok());
  ASSERT_TRUE(client_.complete(client_.workflow_task().task_token(), {activity("work", "acts", 10000)}).ok());
  auto work = client_.activity_task("acts");
  v1::RequestCancelWorkflowRequest cancel;
  cancel.mutable_workflow_execution()->set_workflow_id("cancel-1");
  cancel.set_reason("customer changed their mind");
  v1::RequestCancelWorkflowResponse ignored;
  ASSERT_TRUE(call(client_.stub(), &Stub::RequestCancelWorkflow, cancel, &ignored).ok());

  auto told = client_.workflow_task();  // the workflow cancels its activity, then itself
  ASSERT_EQ(events_of(told.history(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED).size(), 1u);
  v1::Command stop_work;
  stop_work.set_command_type(v1::COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK);
  stop_work.mutable_request_cancel_activity_task()->set_scheduled_event_id(
      events_of(told.history(), v1::EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)[0]->event_id());
  ASSERT_TRUE(client_.complete(told.task_token(), {stop_work}).ok());
  bool cancel_requested = false;
  ASSERT_TRUE(client_.heartbeat(work.task_token(), "half done", &cancel_requested).ok());
  EXPECT_TRUE(cancel_requested) << "the activity learns it from its heartbeat";
  v1::ReportActivityCanceledRequest canceled;
  canceled.set_task_token(work.task_token());
  v1::ReportActivityCanceledResponse ok;
  ASSERT_TRUE(call(client_.stub(), &Stub::ReportActivityCanceled, canceled, &ok).ok());
  auto cleanup = client_.workflow_task();
  ASSERT_EQ(events_of(cleanup.history(), v1::EVENT_TYPE_ACTIVITY_TASK_CANCELED).size(), 1u);
  v1::Command done;
  done.set_command_type(v1::COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION);
  done.mutable_cancel_workflow_execution();
  ASSERT_TRUE(client_.complete(cleanup.task_token(), {done}).ok());
  EXPECT_EQ(client_.status("cancel-1"), v1::WORKFLOW_EXECUTION_STATUS_CANCELED);

  ASSERT_TRUE(client_.start(start_request("terminate-1")).ok());
  v1::TerminateWorkflowRequest terminate;
  terminate.mutable_workflow_execution()->set_workflow_id("terminate-1");
  terminate.set_reason("bad deploy");
  v1::TerminateWorkflowResponse terminated;
  ASSERT_TRUE(call(client_.stub(), &Stub::TerminateWorkflow, terminate, &terminated).ok());
  EXPECT_EQ(client_.status("terminate-1"), v1::WORKFLOW_EXECUTION_STATUS_TERMINATED);
}

TEST_F(Transitions, AChildThatContinuesAsNewReportsToItsParentWhichContinuesToo) {
  ASSERT_TRUE(client_.start(start_request("parent")).ok());
  v1::Command child;
  child.set_command_type(v1::COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION);
  child.mutable_start_child_workflow_execution()->set_workflow_id("child");
  child.mutable_start_child_workflow_execution()->mutable_workflow_type()->set_name("kid");
  child.mutable_start_child_workflow_execution()->mutable_task_queue()->set_name("kids");
  ASSERT_TRUE(client_.complete(client_.workflow_task().task_token(), {child}).ok());

  v1::Command again;
  again.set_command_type(v1::COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION);
  again.mutable_continue_as_new_workflow_execution()->mutable_input()->add_payloads()->set_data("round 2");
  ASSERT_TRUE(client_.complete(client_.workflow_task("kids").task_token(), {again}).ok());
  auto second_run = client_.workflow_task("kids");
  ASSERT_EQ(second_run.history().events(0).workflow_execution_started().input().payloads(0).data(), "round 2");
  ASSERT_TRUE(client_.complete(second_run.task_token(), {finish("kid done")}).ok());

  // The parent hears of the child's start and, in one task or two, its result.
  v1::PollWorkflowTaskResponse parent;
  for (int i = 0; i < 3; ++i) {
    parent = client_.workflow_task();
    if (!events_of(parent.history(), v1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED).empty()) break;
    ASSERT_TRUE(client_.complete(parent.task_token(), {}).ok());
  }
  const auto result = events_of(parent.history(), v1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED);
  ASSERT_EQ(result.size(), 1u);
  EXPECT_EQ(result[0]->child_workflow_execution_completed().result().payloads(0).data(), "kid done");

  v1::Command parent_again;
  parent_again.set_command_type(v1::COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION);
  parent_again.mutable_continue_as_new_workflow_execution();
  ASSERT_TRUE(client_.complete(parent.task_token(), {parent_again}).ok());
  auto fresh = client_.workflow_task();
  EXPECT_EQ(fresh.history().events_size(), 3) << "a fresh history: started, scheduled, started";
  EXPECT_EQ(fresh.history().events(0).workflow_execution_started().continued_execution_run_id(),
            parent.workflow_execution().run_id());
}

TEST_F(Transitions, StickyTasksGoToTheCachingWorkerAndFallBackAfterFiveSeconds) {
  ASSERT_TRUE(client_.start(start_request("sticky-1")).ok());
  ASSERT_TRUE(client_.complete(client_.workflow_task().task_token(), {}, "q/worker-a").ok());
  ASSERT_TRUE(client_.signal("sticky-1", "poke", "1").ok());
  auto sticky = client_.workflow_task("q/worker-a");
  ASSERT_FALSE(sticky.task_token().empty());
  EXPECT_EQ(sticky.history().events(0).event_id(), 4) << "only what the cache has not seen";
  ASSERT_TRUE(client_.complete(sticky.task_token(), {}, "q/worker-a").ok());

  ASSERT_TRUE(client_.signal("sticky-1", "poke", "2").ok());  // worker-a is gone now
  const auto sent = Clock::now();
  auto fallback = client_.workflow_task("q", 20);
  ASSERT_FALSE(fallback.task_token().empty());
  EXPECT_GE(Clock::now() - sent, 4s) << "after the sticky schedule-to-start timeout";
  EXPECT_EQ(fallback.history().events(0).event_id(), 1) << "with full history";
}

TEST_F(Transitions, QueriesAreAnsweredOrTimeOutWhenNoWorkerIsThere) {
  ASSERT_TRUE(client_.start(start_request("query-1")).ok());
  ASSERT_TRUE(client_.complete(client_.workflow_task().task_token(), {}).ok());
  v1::QueryWorkflowRequest q;
  q.mutable_workflow_execution()->set_workflow_id("query-1");
  q.set_query_type("status");
  *q.mutable_timeout() = millis(300);
  v1::QueryWorkflowResponse out;
  const auto asked = Clock::now();
  grpc::Status s = call(client_.stub(), &Stub::QueryWorkflow, q, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << "no worker: an answer, not a hang";
  EXPECT_LT(Clock::now() - asked, 2s);

  std::thread worker([&] {
    auto task = client_.workflow_task();
    v1::CompleteWorkflowTaskRequest answer;
    answer.set_task_token(task.task_token());
    (*answer.mutable_query_results())[task.queries().begin()->first].mutable_answer()->add_payloads()->set_data(
        "waiting for payment");
    v1::CompleteWorkflowTaskResponse ignored;
    EXPECT_TRUE(call(client_.stub(), &Stub::CompleteWorkflowTask, answer, &ignored).ok());
  });
  *q.mutable_timeout() = millis(5000);
  s = call(client_.stub(), &Stub::QueryWorkflow, q, &out);
  worker.join();
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(out.result().payloads(0).data(), "waiting for payment");
}

TEST_F(Transitions, MalformedCommandsAndIdsAreRefusedNamingTheField) {
  grpc::Status s = client_.start(start_request(std::string(65, 'x')));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "workflow_id is longer than 64 bytes");

  ASSERT_TRUE(client_.start(start_request("bad-commands")).ok());
  auto task = client_.workflow_task();
  v1::Command negative = timer("t", 0);
  negative.mutable_start_timer()->mutable_start_to_fire_timeout()->set_seconds(-5);
  s = client_.complete(task.task_token(), {negative});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "commands[0].start_timer.start_to_fire_timeout must not be negative");
  s = client_.complete(task.task_token(), {timer("t", 0)});
  EXPECT_NE(s.error_message().find("start_to_fire_timeout must be positive"), std::string::npos) << s.error_message();
  s = client_.complete(task.task_token(), {activity("same", "q", 1000), activity("same", "q", 1000)});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("activity_id is already used"), std::string::npos) << s.error_message();
  s = client_.complete(task.task_token(), {activity(std::string(65, 'a'), "q", 1000)});
  EXPECT_NE(s.error_message().find("activity_id is too long"), std::string::npos) << s.error_message();
  ASSERT_TRUE(client_.complete(task.task_token(), {}).ok()) << "nothing was applied by the refused completions";

  // A queue nobody has used is not an error: the poll waits and comes back empty.
  v1::PollActivityTaskRequest unknown;
  unknown.mutable_task_queue()->set_name("never-heard-of-it");
  v1::PollActivityTaskResponse empty;
  ASSERT_TRUE(call(client_.stub(), &Stub::PollActivityTask, unknown, &empty).ok());
  EXPECT_TRUE(empty.task_token().empty());
}

}  // namespace
}  // namespace reprise
