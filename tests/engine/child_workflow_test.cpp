// Child workflows and continue-as-new through the engine: the transfer tasks
// that start children, report their close to the parent, and apply the
// parent-close policy.
#include "gated_store.hpp"

namespace reprise::engine {
namespace {

v1::Command start_child(const std::string& id, v1::ParentClosePolicy policy = {}) {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION);
  auto* a = c.mutable_start_child_workflow_execution();
  a->set_workflow_id(id);
  a->mutable_workflow_type()->set_name("shipping");
  a->mutable_task_queue()->set_name("kids");
  a->mutable_input()->add_payloads()->set_data("parcel");
  a->set_parent_close_policy(policy);
  return c;
}

const v1::HistoryEvent* find_event(const v1::PollWorkflowTaskResponse& task, v1::EventType type) {
  for (const auto& e : task.history().events()) {
    if (e.event_type() == type) return &e;
  }
  return nullptr;
}

using ChildWorkflowTest = EngineTest;

TEST_F(ChildWorkflowTest, AChildStartsAndItsResultReachesTheParent) {
  ASSERT_TRUE(start("order-1").is_ok());
  ASSERT_TRUE(complete(poll_workflow().task_token(), {start_child("ship-1")}).is_ok());

  auto child = poll_workflow("kids");
  ASSERT_FALSE(child.task_token().empty()) << "the transfer task started the child";
  EXPECT_EQ(child.workflow_execution().workflow_id(), "ship-1");
  const auto& started = child.history().events(0).workflow_execution_started();
  EXPECT_EQ(started.input().payloads(0).data(), "parcel");
  EXPECT_EQ(started.parent_execution().workflow_id(), "order-1");

  auto parent = poll_workflow();
  const auto* child_started = find_event(parent, v1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED);
  ASSERT_NE(child_started, nullptr);
  EXPECT_EQ(child_started->child_workflow_execution_started().workflow_execution().run_id(),
            child.workflow_execution().run_id());

  v1::DescribeWorkflowRequest describe;
  describe.mutable_workflow_execution()->set_workflow_id("order-1");
  auto d = call(&Engine::describe_workflow, describe);
  ASSERT_TRUE(d.is_ok());
  ASSERT_EQ(d->pending_children_size(), 1);
  EXPECT_EQ(d->pending_children(0).workflow_id(), "ship-1");

  ASSERT_TRUE(complete(parent.task_token(), {}).is_ok());
  ASSERT_TRUE(complete(child.task_token(), {complete_with("shipped")}).is_ok());
  auto told = poll_workflow();
  const auto* completed = find_event(told, v1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED);
  ASSERT_NE(completed, nullptr) << "the child's close reached the parent";
  EXPECT_EQ(completed->child_workflow_execution_completed().result().payloads(0).data(), "shipped");
  EXPECT_EQ(completed->child_workflow_execution_completed().started_event_id(), child_started->event_id());
  ASSERT_TRUE(complete(told.task_token(), {complete_with("done")}).is_ok());
  EXPECT_EQ(wait_for_close("order-1").event_type(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
}

TEST_F(ChildWorkflowTest, ParentClosePolicyTerminatesCancelsOrAbandons) {
  ASSERT_TRUE(start("parent-1").is_ok());
  ASSERT_TRUE(
      complete(poll_workflow().task_token(), {start_child("terminated-kid", v1::PARENT_CLOSE_POLICY_TERMINATE),
                                              start_child("canceled-kid", v1::PARENT_CLOSE_POLICY_REQUEST_CANCEL),
                                              start_child("abandoned-kid", v1::PARENT_CLOSE_POLICY_ABANDON)})
          .is_ok());
  for (int i = 0; i < 3; ++i) {
    auto kid = poll_workflow("kids");
    ASSERT_FALSE(kid.task_token().empty());
    ASSERT_TRUE(complete(kid.task_token(), {}).is_ok());  // each kid now waits for something
  }
  auto parent = poll_workflow();
  ASSERT_FALSE(parent.task_token().empty());
  // Whatever started events the parent has not seen yet fail this close with
  // UNHANDLED_EVENTS; the next task then closes it.
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (complete(parent.task_token(), {complete_with("bye")}).is_ok()) break;
    parent = poll_workflow();
  }
  EXPECT_EQ(wait_for_close("parent-1").event_type(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);

  const auto terminated = wait_for_close("terminated-kid");
  EXPECT_EQ(terminated.event_type(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED);
  EXPECT_NE(terminated.workflow_execution_terminated().reason().find("parent workflow parent-1/"), std::string::npos);

  auto asked = poll_workflow("kids");  // the cancel request is for the workflow to handle
  ASSERT_EQ(asked.workflow_execution().workflow_id(), "canceled-kid");
  EXPECT_NE(find_event(asked, v1::EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED), nullptr);

  v1::DescribeWorkflowRequest describe;
  describe.mutable_workflow_execution()->set_workflow_id("abandoned-kid");
  auto d = call(&Engine::describe_workflow, describe);
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->info().status(), v1::WORKFLOW_EXECUTION_STATUS_RUNNING) << "abandoned children live on";
  EXPECT_EQ(d->info().parent_execution().workflow_id(), "parent-1");
}

using ChildPolicyRaceTest = GatedEngineTest;

// The policy's transfer looks up the child's current run, then waits in that
// run's queue; if the run closes into a retry meanwhile, the policy is the
// retry's to obey, not lost with the closed run.
TEST_F(ChildPolicyRaceTest, AParentClosePolicyFollowsAChildThatClosedIntoARetryMeanwhile) {
  ASSERT_TRUE(start("parent-r").is_ok());
  v1::Command child = start_child("retried-kid", v1::PARENT_CLOSE_POLICY_TERMINATE);
  auto* retry = child.mutable_start_child_workflow_execution()->mutable_retry_policy();
  retry->mutable_initial_interval()->set_seconds(3600);  // the clock is manual: the retry waits, running
  retry->set_maximum_attempts(2);
  ASSERT_TRUE(complete(poll_workflow().task_token(), {child}).is_ok());
  auto kid = poll_workflow("kids");
  ASSERT_FALSE(kid.task_token().empty());
  auto parent = poll_workflow();  // the child has started
  ASSERT_EQ(parent.workflow_execution().workflow_id(), "parent-r");

  // The kid's first run fails into a retry, a commit held back ...
  gate_->hold_next_commit_of("retried-kid");
  v1::Command fail;
  fail.set_command_type(v1::COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION);
  fail.mutable_fail_workflow_execution()->mutable_failure()->set_message("first try failed");
  auto failing = std::async(std::launch::async, [&] { return complete(kid.task_token(), {fail}); });
  gate_->wait_until_held();
  // ... while the parent closes: its policy finds the first run current and
  // queues behind the held failure.
  ASSERT_TRUE(complete(parent.task_token(), {complete_with("bye")}).is_ok());
  std::this_thread::sleep_for(300ms);
  gate_->release();
  ASSERT_TRUE(failing.get().is_ok());

  const auto closed = wait_for_close("retried-kid");  // the retry, the id's current run now
  EXPECT_EQ(closed.event_type(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED)
      << "the retry of a child whose parent closed with TERMINATE keeps running";
}

TEST_F(ChildWorkflowTest, AChildWhoseIdIsTakenFailsToStartAndTheParentHearsWhy) {
  ASSERT_TRUE(start("busy").is_ok());  // a running workflow already has the id
  ASSERT_TRUE(start("parent-2").is_ok());
  auto busy_task = poll_workflow();
  auto parent = busy_task.workflow_execution().workflow_id() == "parent-2" ? busy_task : poll_workflow();
  ASSERT_EQ(parent.workflow_execution().workflow_id(), "parent-2");
  ASSERT_TRUE(complete(parent.task_token(), {start_child("busy")}).is_ok());
  v1::PollWorkflowTaskResponse told;
  do {
    told = poll_workflow();
  } while (!told.task_token().empty() && told.workflow_execution().workflow_id() != "parent-2");
  const auto* failed = find_event(told, v1::EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->start_child_workflow_execution_failed().cause(), v1::EXTERNAL_FAILURE_CAUSE_ALREADY_EXISTS);
}

TEST_F(ChildWorkflowTest, AChildThatContinuesAsNewReportsItsLastRun) {
  ASSERT_TRUE(start("parent-3").is_ok());
  ASSERT_TRUE(complete(poll_workflow().task_token(), {start_child("looper")}).is_ok());
  auto first_run = poll_workflow("kids");
  v1::Command again;
  again.set_command_type(v1::COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION);
  again.mutable_continue_as_new_workflow_execution()->mutable_input()->add_payloads()->set_data("round 2");
  ASSERT_TRUE(complete(first_run.task_token(), {again}).is_ok());

  auto second_run = poll_workflow("kids");
  ASSERT_EQ(second_run.workflow_execution().workflow_id(), "looper");
  EXPECT_NE(second_run.workflow_execution().run_id(), first_run.workflow_execution().run_id());
  const auto& started = second_run.history().events(0).workflow_execution_started();
  EXPECT_EQ(started.input().payloads(0).data(), "round 2");
  EXPECT_EQ(started.parent_execution().workflow_id(), "parent-3") << "the parent carries over";
  ASSERT_TRUE(complete(second_run.task_token(), {complete_with("looped")}).is_ok());

  v1::PollWorkflowTaskResponse told;
  for (int i = 0; i < 3 && !find_event(told, v1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED); ++i) {
    if (!told.task_token().empty()) {
      ASSERT_TRUE(complete(told.task_token(), {}).is_ok());
    }
    told = poll_workflow();
  }
  const auto* completed = find_event(told, v1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED);
  ASSERT_NE(completed, nullptr);
  EXPECT_EQ(completed->child_workflow_execution_completed().result().payloads(0).data(), "looped");
  EXPECT_EQ(completed->child_workflow_execution_completed().workflow_execution().run_id(),
            second_run.workflow_execution().run_id());
}

TEST_F(ChildWorkflowTest, PendingChildrenAreLimited) {
  ASSERT_TRUE(start("greedy").is_ok());
  std::vector<v1::Command> many;
  for (int i = 0; i <= 2000; ++i) many.push_back(start_child("kid-" + std::to_string(i)));
  const Status s = complete(poll_workflow().task_token(), many);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("already has 2000 pending child workflows"), std::string::npos) << s.to_string();
}

}  // namespace
}  // namespace reprise::engine
