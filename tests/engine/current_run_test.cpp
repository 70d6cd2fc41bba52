// Requests that name a workflow by id alone act on its current run, even
// when that run continues as new while the request waits in its queue.
#include "gated_store.hpp"

namespace reprise::engine {
namespace {

class CurrentRunTest : public GatedEngineTest {
 public:
  // Starts `id`, then has its first task continue as new with the commit
  // held: the request `send` makes resolves to the old run and waits in its
  // queue. Returns the request's outcome once the continue-as-new commits.
  Status race_continue_as_new(const std::string& id, std::function<void(std::function<void(Status)>)> send) {
    EXPECT_TRUE(start(id).is_ok());
    auto task = poll_workflow();
    v1::Command next;
    next.set_command_type(v1::COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION);
    next.mutable_continue_as_new_workflow_execution()->mutable_workflow_type()->set_name("hello");
    next.mutable_continue_as_new_workflow_execution()->mutable_task_queue()->set_name("greetings");
    gate_->hold_next_commit();
    std::promise<Status> continued;
    v1::CompleteWorkflowTaskRequest r;
    r.set_task_token(task.task_token());
    *r.add_commands() = next;
    engine_->complete_workflow_task(
        r, [&](Result<v1::CompleteWorkflowTaskResponse> out) { continued.set_value(out.status()); });
    gate_->wait_until_held();
    std::promise<Status> answered;
    send([&](Status s) { answered.set_value(s); });
    gate_->release();
    EXPECT_TRUE(continued.get_future().get().is_ok());
    return answered.get_future().get();
  }

  std::string current_run(const std::string& id) {
    v1::DescribeWorkflowRequest r;
    r.mutable_workflow_execution()->set_workflow_id(id);
    auto d = call(&Engine::describe_workflow, r);
    return d ? d->info().execution().run_id() : "";
  }
};

TEST_F(CurrentRunTest, ASignalQueuedBehindAContinueAsNewReachesTheNewRun) {
  Status s = race_continue_as_new("sig", [&](std::function<void(Status)> done) {
    v1::SignalWorkflowRequest r;
    r.mutable_workflow_execution()->set_workflow_id("sig");
    r.set_signal_name("approve");
    engine_->signal_workflow(r, [done](Result<v1::SignalWorkflowResponse> out) { done(out.status()); });
  });
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  auto task = poll_workflow();
  ASSERT_EQ(task.workflow_execution().run_id(), current_run("sig"));
  bool signaled = false;
  for (const auto& e : task.history().events()) signaled |= e.has_workflow_execution_signaled();
  EXPECT_TRUE(signaled) << "the new run has the signal";
}

TEST_F(CurrentRunTest, ACancelQueuedBehindAContinueAsNewReachesTheNewRun) {
  Status s = race_continue_as_new("cancel", [&](std::function<void(Status)> done) {
    v1::RequestCancelWorkflowRequest r;
    r.mutable_workflow_execution()->set_workflow_id("cancel");
    engine_->request_cancel_workflow(r, [done](Result<v1::RequestCancelWorkflowResponse> out) { done(out.status()); });
  });
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  auto task = poll_workflow();
  bool requested = false;
  for (const auto& e : task.history().events()) requested |= e.has_workflow_execution_cancel_requested();
  EXPECT_TRUE(requested) << "the new run is asked to cancel";
}

TEST_F(CurrentRunTest, ATerminateQueuedBehindAContinueAsNewEndsTheNewRun) {
  Status s = race_continue_as_new("end", [&](std::function<void(Status)> done) {
    v1::TerminateWorkflowRequest r;
    r.mutable_workflow_execution()->set_workflow_id("end");
    engine_->terminate_workflow(r, [done](Result<v1::TerminateWorkflowResponse> out) { done(out.status()); });
  });
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(wait_for_close("end").event_type(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED);
}

TEST_F(CurrentRunTest, ARequestForAClosedRunWithoutSuccessorIsStillRefused) {
  ASSERT_TRUE(start("done").is_ok());
  ASSERT_TRUE(complete(poll_workflow().task_token(), {complete_with("ok")}).is_ok());
  v1::SignalWorkflowRequest r;
  r.mutable_workflow_execution()->set_workflow_id("done");
  r.set_signal_name("late");
  EXPECT_EQ(call(&Engine::signal_workflow, r).status().code(), StatusCode::kFailedPrecondition);
}

// A start retried with its request id after the run it started continued
// as new (its answer lost) is the same start: it is answered with the
// chain's run, not ALREADY_EXISTS; and, once the chain has closed, still
// the same answer. A start with another request id is refused while a run
// of the chain is open (Temporal's default conflict policy).
TEST_F(CurrentRunTest, AStartRetriedAfterItsRunContinuedAsNewGetsTheSameAnswer) {
  auto first = start("chain", "req-1");
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  v1::Command next;
  next.set_command_type(v1::COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION);
  next.mutable_continue_as_new_workflow_execution()->mutable_workflow_type()->set_name("hello");
  ASSERT_TRUE(complete(poll_workflow().task_token(), {next}).is_ok());
  const std::string continued = current_run("chain");
  ASSERT_NE(continued, first->run_id());

  auto retried = start("chain", "req-1");
  ASSERT_TRUE(retried.is_ok()) << "a retry of the start that began the chain: " << retried.status().to_string();
  EXPECT_FALSE(retried->started());
  EXPECT_EQ(retried->run_id(), continued);
  auto other = start("chain", "req-2");
  EXPECT_EQ(other.status().code(), StatusCode::kAlreadyExists) << "another start while the chain runs";

  ASSERT_TRUE(complete(poll_workflow().task_token(), {complete_with("ok")}).is_ok());
  auto after_close = start("chain", "req-1");
  ASSERT_TRUE(after_close.is_ok()) << after_close.status().to_string();
  EXPECT_FALSE(after_close->started());
  EXPECT_EQ(after_close->run_id(), continued);
}

}  // namespace
}  // namespace reprise::engine
