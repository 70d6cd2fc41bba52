// Workflow and child-workflow retry policies through a real server: a run
// that fails or times out is followed by a new run of the same id after the
// policy's backoff, until a run succeeds, the attempts run out, the failure
// is not retryable or the execution timeout would pass; canceled and
// terminated runs are not retried; the backoff survives kill -9.
#include <future>

#include "server_harness.hpp"

namespace reprise {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

void set_millis(google::protobuf::Duration* d, int64_t ms) {
  d->set_seconds(ms / 1000);
  d->set_nanos(static_cast<int32_t>(ms % 1000) * 1'000'000);
}

int64_t millis_of(const google::protobuf::Duration& d) { return d.seconds() * 1000 + d.nanos() / 1'000'000; }

v1::RetryPolicy policy(int64_t initial_ms, double coefficient, int maximum_attempts) {
  v1::RetryPolicy p;
  set_millis(p.mutable_initial_interval(), initial_ms);
  p.set_backoff_coefficient(coefficient);
  p.set_maximum_attempts(maximum_attempts);
  return p;
}

v1::StartWorkflowRequest retried_start(const std::string& id, const v1::RetryPolicy& retry) {
  auto r = start_request(id);
  *r.mutable_retry_policy() = retry;
  r.mutable_input()->add_payloads()->set_data("the input");
  return r;
}

std::string start(Stub& stub, const v1::StartWorkflowRequest& r) {
  v1::StartWorkflowResponse started;
  const grpc::Status s = call(stub, &Stub::StartWorkflow, r, &started);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return started.run_id();
}

v1::Command fail_with(const std::string& type, bool non_retryable = false) {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION);
  auto* f = c.mutable_fail_workflow_execution()->mutable_failure();
  f->set_message("run failed: " + type);
  f->set_type(type);
  f->set_non_retryable(non_retryable);
  return c;
}

v1::GetHistoryResponse history_of_run(Stub& stub, const std::string& workflow_id, const std::string& run_id) {
  v1::GetHistoryRequest h;
  h.mutable_workflow_execution()->set_workflow_id(workflow_id);
  h.mutable_workflow_execution()->set_run_id(run_id);
  v1::GetHistoryResponse out;
  EXPECT_TRUE(call(stub, &Stub::GetHistory, h, &out).ok());
  return out;
}

const v1::WorkflowExecutionStartedEventAttributes& started_of(const v1::PollWorkflowTaskResponse& task) {
  return task.history().events(0).workflow_execution_started();
}

// What a client waiting for the result does: long-poll the close event and
// follow new_execution_run_id to the run that has the last word.
v1::HistoryEvent final_close(const std::string& address, const std::string& workflow_id, std::string run_id) {
  auto stub = v1::WorkflowService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  for (int hops = 0; hops < 20; ++hops) {
    v1::GetHistoryRequest r;
    r.mutable_workflow_execution()->set_workflow_id(workflow_id);
    r.mutable_workflow_execution()->set_run_id(run_id);
    r.set_wait_new_event(true);
    r.set_close_event_only(true);
    r.mutable_wait_timeout()->set_seconds(30);
    v1::GetHistoryResponse out;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(40));
    const grpc::Status s = stub->GetHistory(&context, r, &out);
    EXPECT_TRUE(s.ok()) << s.error_message();
    if (!s.ok() || out.history().events_size() == 0) return {};
    const v1::HistoryEvent& e = out.history().events(0);
    const std::string next = e.has_workflow_execution_failed() ? e.workflow_execution_failed().new_execution_run_id()
                             : e.has_workflow_execution_timed_out()
                                 ? e.workflow_execution_timed_out().new_execution_run_id()
                                 : "";
    if (next.empty()) return e;
    run_id = next;
  }
  ADD_FAILURE() << "the chain of " << workflow_id << " did not end";
  return {};
}

TEST(WorkflowRetry, AFailingRunIsRetriedWithBackoffUntilItsAttemptsRunOut) {
  TempDir dir;
  Server server(dir.file("retry.db"));
  const std::string first_run = start(server.stub(), retried_start("flaky", policy(300, 2.0, 3)));
  auto waiting = std::async(std::launch::async, [&] { return final_close(server.address(), "flaky", first_run); });

  std::string run_id = first_run;
  auto failed_at = Clock::now();  // when the previous attempt was failed: the backoff runs from there
  for (int attempt = 1; attempt <= 3; ++attempt) {
    auto task = next_workflow_task(server.stub());
    ASSERT_EQ(task.workflow_execution().run_id(), run_id);
    const auto& started = started_of(task);
    EXPECT_EQ(started.attempt(), attempt);
    EXPECT_EQ(started.input().payloads(0).data(), "the input");
    EXPECT_EQ(started.retry_policy().maximum_attempts(), 3);
    if (attempt > 1) {
      // 300 ms, then 600 ms: initial × coefficient^(attempt - 2), and the
      // first task came no sooner.
      const int64_t backoff = 300 * (attempt == 2 ? 1 : 2);
      EXPECT_EQ(started.initiator(), v1::CONTINUE_AS_NEW_INITIATOR_RETRY);
      EXPECT_EQ(millis_of(started.first_workflow_task_backoff()), backoff);
      EXPECT_EQ(started.first_execution_run_id(), first_run);
      EXPECT_EQ(started.original_execution_run_id(), run_id) << "a retry's own id: it seeds random() afresh";
      EXPECT_EQ(started.continued_failure().type(), "Boom");
      EXPECT_GE(std::chrono::duration_cast<milliseconds>(Clock::now() - failed_at).count(), backoff - 20);
    }
    failed_at = Clock::now();
    ASSERT_TRUE(complete(server.stub(), task.task_token(), {fail_with("Boom")}).ok());
    const auto history = history_of_run(server.stub(), "flaky", run_id);
    const auto& close = history.history().events(history.history().events_size() - 1);
    ASSERT_TRUE(close.has_workflow_execution_failed());
    if (attempt < 3) {
      const std::string next = close.workflow_execution_failed().new_execution_run_id();
      ASSERT_FALSE(next.empty()) << "attempt " << attempt << " was not retried";
      EXPECT_EQ(next, describe(server.stub(), "flaky").info().execution().run_id()) << "the id's current run";
      run_id = next;
    } else {
      EXPECT_TRUE(close.workflow_execution_failed().new_execution_run_id().empty()) << "maximum_attempts is 3";
    }
  }
  // The client that began waiting on attempt 1 gets the last run's failure.
  const v1::HistoryEvent last = waiting.get();
  ASSERT_TRUE(last.has_workflow_execution_failed());
  EXPECT_EQ(last.workflow_execution_failed().failure().type(), "Boom");
  EXPECT_EQ(describe(server.stub(), "flaky").info().status(), v1::WORKFLOW_EXECUTION_STATUS_FAILED);
}

TEST(WorkflowRetry, AClientWaitingOnTheFirstAttemptGetsTheResultOfTheSecond) {
  TempDir dir;
  Server server(dir.file("retry.db"));
  const std::string first_run = start(server.stub(), retried_start("second-time", policy(100, 2.0, 0)));
  auto waiting =
      std::async(std::launch::async, [&] { return final_close(server.address(), "second-time", first_run); });
  auto task = next_workflow_task(server.stub());
  ASSERT_TRUE(complete(server.stub(), task.task_token(), {fail_with("Flaky")}).ok());
  task = next_workflow_task(server.stub());
  EXPECT_NE(task.workflow_execution().run_id(), first_run);
  EXPECT_EQ(started_of(task).attempt(), 2);
  ASSERT_TRUE(complete(server.stub(), task.task_token(), {finish("worked")}).ok());
  const v1::HistoryEvent last = waiting.get();
  ASSERT_TRUE(last.has_workflow_execution_completed());
  EXPECT_EQ(last.workflow_execution_completed().result().payloads(0).data(), "worked");
}

// Temporal's rule: the run a continue-as-new starts keeps the retry policy
// of the run that continued, unless the command sets its own; so it is
// retried when it fails, at attempt 2 of its new chain.
TEST(WorkflowRetry, ARunThatContinuedAsNewKeepsTheRetryPolicy) {
  TempDir dir;
  Server server(dir.file("retry.db"));
  start(server.stub(), retried_start("continued", policy(100, 2.0, 3)));
  auto task = next_workflow_task(server.stub());
  v1::Command continue_as_new;
  continue_as_new.set_command_type(v1::COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION);
  continue_as_new.mutable_continue_as_new_workflow_execution()->mutable_input()->add_payloads()->set_data("next");
  ASSERT_TRUE(complete(server.stub(), task.task_token(), {continue_as_new}).ok());
  task = next_workflow_task(server.stub());
  const std::string continued = task.workflow_execution().run_id();
  EXPECT_EQ(started_of(task).retry_policy().maximum_attempts(), 3) << "the policy carried over";
  EXPECT_EQ(started_of(task).attempt(), 1) << "a new chain of attempts";
  ASSERT_TRUE(complete(server.stub(), task.task_token(), {fail_with("Flaky")}).ok());
  const auto history = history_of_run(server.stub(), "continued", continued);
  const auto& close = history.history().events(history.history().events_size() - 1);
  ASSERT_TRUE(close.has_workflow_execution_failed());
  EXPECT_FALSE(close.workflow_execution_failed().new_execution_run_id().empty()) << "the continued run is retried";
  task = next_workflow_task(server.stub());
  EXPECT_EQ(started_of(task).attempt(), 2);
  EXPECT_EQ(started_of(task).input().payloads(0).data(), "next") << "with the continued run's input";
  ASSERT_TRUE(complete(server.stub(), task.task_token(), {finish("done")}).ok());
}

TEST(WorkflowRetry, ANonRetryableFailureEndsTheChain) {
  TempDir dir;
  Server server(dir.file("retry.db"));
  auto retry = policy(100, 2.0, 0);
  retry.add_non_retryable_error_types("Fatal");
  for (const bool by_flag : {false, true}) {
    const std::string id = by_flag ? "flagged" : "listed";
    const std::string run = start(server.stub(), retried_start(id, retry));
    auto task = next_workflow_task(server.stub());
    ASSERT_TRUE(
        complete(server.stub(), task.task_token(), {by_flag ? fail_with("Other", true) : fail_with("Fatal")}).ok());
    const auto history = history_of_run(server.stub(), id, run);
    const auto& close = history.history().events(history.history().events_size() - 1);
    ASSERT_TRUE(close.has_workflow_execution_failed());
    EXPECT_TRUE(close.workflow_execution_failed().new_execution_run_id().empty()) << id;
    EXPECT_EQ(describe(server.stub(), id).info().execution().run_id(), run) << id;
  }
}

TEST(WorkflowRetry, TheExecutionTimeoutBoundsTheWholeChain) {
  TempDir dir;
  Server server(dir.file("retry.db"));
  // Attempt 2 starts 1 s after attempt 1 fails, inside the 3 s execution
  // timeout; attempt 3 would start 3 s after attempt 2 fails, past it.
  auto r = retried_start("bounded", policy(1000, 3.0, 0));
  r.mutable_workflow_execution_timeout()->set_seconds(3);
  const std::string first_run = start(server.stub(), r);
  auto task = next_workflow_task(server.stub());
  ASSERT_TRUE(complete(server.stub(), task.task_token(), {fail_with("Boom")}).ok());
  task = next_workflow_task(server.stub());
  ASSERT_EQ(started_of(task).attempt(), 2);
  const std::string second_run = task.workflow_execution().run_id();
  ASSERT_TRUE(complete(server.stub(), task.task_token(), {fail_with("Boom")}).ok());
  const auto history = history_of_run(server.stub(), "bounded", second_run);
  const auto& close = history.history().events(history.history().events_size() - 1);
  ASSERT_TRUE(close.has_workflow_execution_failed());
  EXPECT_TRUE(close.workflow_execution_failed().new_execution_run_id().empty());
  EXPECT_EQ(describe(server.stub(), "bounded").info().execution().run_id(), second_run);
}

TEST(WorkflowRetry, ATimedOutRunIsRetriedAndTheAttemptsBoundIt) {
  TempDir dir;
  Server server(dir.file("retry.db"));
  auto r = retried_start("slow", policy(100, 1.0, 2));
  set_millis(r.mutable_workflow_run_timeout(), 500);
  const std::string first_run = start(server.stub(), r);
  // No worker answers: each run times out.
  const v1::HistoryEvent first_close = [&] {
    auto h = history_of_run(server.stub(), "slow", first_run);
    for (int i = 0; i < 50 && !h.history().events(h.history().events_size() - 1).has_workflow_execution_timed_out();
         ++i) {
      std::this_thread::sleep_for(milliseconds(100));
      h = history_of_run(server.stub(), "slow", first_run);
    }
    return h.history().events(h.history().events_size() - 1);
  }();
  ASSERT_TRUE(first_close.has_workflow_execution_timed_out());
  const std::string second_run = first_close.workflow_execution_timed_out().new_execution_run_id();
  ASSERT_FALSE(second_run.empty());
  const v1::HistoryEvent last = final_close(server.address(), "slow", first_run);
  ASSERT_TRUE(last.has_workflow_execution_timed_out());
  const auto second = history_of_run(server.stub(), "slow", second_run);
  EXPECT_EQ(second.history().events(0).workflow_execution_started().attempt(), 2);
  EXPECT_TRUE(second.history()
                  .events(second.history().events_size() - 1)
                  .workflow_execution_timed_out()
                  .new_execution_run_id()
                  .empty())
      << "maximum_attempts is 2";
}

TEST(WorkflowRetry, CanceledAndTerminatedRunsAreNotRetried) {
  TempDir dir;
  Server server(dir.file("retry.db"));
  const std::string canceled = start(server.stub(), retried_start("canceled", policy(100, 2.0, 0)));
  const std::string terminated = start(server.stub(), retried_start("terminated", policy(100, 2.0, 0)));

  v1::RequestCancelWorkflowRequest cancel;
  cancel.mutable_workflow_execution()->set_workflow_id("canceled");
  v1::RequestCancelWorkflowResponse cancel_out;
  ASSERT_TRUE(call(server.stub(), &Stub::RequestCancelWorkflow, cancel, &cancel_out).ok());
  v1::TerminateWorkflowRequest terminate;
  terminate.mutable_workflow_execution()->set_workflow_id("terminated");
  v1::TerminateWorkflowResponse terminate_out;
  ASSERT_TRUE(call(server.stub(), &Stub::TerminateWorkflow, terminate, &terminate_out).ok());
  for (int handled = 0; handled < 1;) {
    auto task = next_workflow_task(server.stub());
    if (task.workflow_execution().workflow_id() != "canceled") continue;
    v1::Command c;
    c.set_command_type(v1::COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION);
    c.mutable_cancel_workflow_execution();
    ASSERT_TRUE(complete(server.stub(), task.task_token(), {c}).ok());
    ++handled;
  }
  std::this_thread::sleep_for(milliseconds(400));  // past any backoff a retry would have had
  EXPECT_EQ(describe(server.stub(), "canceled").info().status(), v1::WORKFLOW_EXECUTION_STATUS_CANCELED);
  EXPECT_EQ(describe(server.stub(), "canceled").info().execution().run_id(), canceled);
  EXPECT_EQ(describe(server.stub(), "terminated").info().status(), v1::WORKFLOW_EXECUTION_STATUS_TERMINATED);
  EXPECT_EQ(describe(server.stub(), "terminated").info().execution().run_id(), terminated);
}

TEST(WorkflowRetry, TheBackoffSurvivesAKill9) {
  TempDir dir;
  std::string next_run;
  {
    Server server(dir.file("retry.db"));
    start(server.stub(), retried_start("durable", policy(2000, 2.0, 0)));
    auto task = next_workflow_task(server.stub());
    ASSERT_TRUE(complete(server.stub(), task.task_token(), {fail_with("Boom")}).ok());
    next_run = describe(server.stub(), "durable").info().execution().run_id();
    ASSERT_NE(next_run, task.workflow_execution().run_id());
    // During the backoff there is no task for the new run.
    EXPECT_TRUE(poll_workflow(server.stub()).task_token().empty());
    server.kill9();
  }
  Server restarted(dir.file("retry.db"));
  auto task = next_workflow_task(restarted.stub());
  EXPECT_EQ(task.workflow_execution().run_id(), next_run);
  EXPECT_EQ(started_of(task).attempt(), 2);
  ASSERT_TRUE(complete(restarted.stub(), task.task_token(), {finish("after the restart")}).ok());
  EXPECT_EQ(describe(restarted.stub(), "durable").info().status(), v1::WORKFLOW_EXECUTION_STATUS_COMPLETED);
}

TEST(WorkflowRetry, ASignalDuringTheBackoffWaitsForTheRetrysFirstTask) {
  TempDir dir;
  Server server(dir.file("retry.db"));
  start(server.stub(), retried_start("signaled", policy(1500, 2.0, 0)));
  auto task = next_workflow_task(server.stub());
  ASSERT_TRUE(complete(server.stub(), task.task_token(), {fail_with("Boom")}).ok());
  ASSERT_TRUE(poke(server.stub(), "signaled").ok()) << "the id's current run is the retry, open";
  EXPECT_TRUE(poll_workflow(server.stub()).task_token().empty()) << "the signal did not cut the backoff short";
  task = next_workflow_task(server.stub());
  EXPECT_EQ(started_of(task).attempt(), 2);
  EXPECT_EQ(count_events(history_of(server.stub(), "signaled"), v1::EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED), 1);
  const auto& events = task.history().events();
  EXPECT_TRUE(std::any_of(events.begin(), events.end(), [](const v1::HistoryEvent& e) {
    return e.has_workflow_execution_signaled();
  })) << "the first task sees the signal";
}

TEST(WorkflowRetry, AParentSeesOnlyTheLastRunOfItsRetriedChild) {
  TempDir dir;
  Server server(dir.file("retry.db"));
  start(server.stub(), start_request("parent"));
  auto task = next_workflow_task(server.stub());
  v1::Command child;
  child.set_command_type(v1::COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION);
  auto* a = child.mutable_start_child_workflow_execution();
  a->set_workflow_id("kid");
  a->mutable_workflow_type()->set_name("hello");
  *a->mutable_retry_policy() = policy(100, 2.0, 3);
  ASSERT_TRUE(complete(server.stub(), task.task_token(), {child}).ok());

  int kid_runs = 0;
  for (int tasks = 0; tasks < 10; ++tasks) {
    task = next_workflow_task(server.stub());
    const auto& events = task.history().events();
    if (task.workflow_execution().workflow_id() == "kid") {
      ++kid_runs;
      EXPECT_EQ(started_of(task).attempt(), kid_runs);
      ASSERT_TRUE(
          complete(server.stub(), task.task_token(), {kid_runs == 1 ? fail_with("Flaky") : finish("kid's result")})
              .ok());
      continue;
    }
    EXPECT_EQ(std::count_if(events.begin(), events.end(),
                            [](const v1::HistoryEvent& e) { return e.has_child_workflow_execution_failed(); }),
              0)
        << "the parent saw the failed first run";
    const auto done = std::find_if(events.begin(), events.end(), [](const v1::HistoryEvent& e) {
      return e.has_child_workflow_execution_completed();
    });
    if (done == events.end()) {
      ASSERT_TRUE(complete(server.stub(), task.task_token(), {}).ok());
      continue;
    }
    EXPECT_EQ(done->child_workflow_execution_completed().result().payloads(0).data(), "kid's result");
    EXPECT_EQ(kid_runs, 2);
    ASSERT_TRUE(complete(server.stub(), task.task_token(), {finish("done")}).ok());
    return;
  }
  FAIL() << "the parent never learned how its child ended";
}

}  // namespace
}  // namespace reprise
