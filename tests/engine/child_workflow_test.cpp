// Child workflows and continue-as-new through the engine: the transfer tasks
// that start children, report their close to the parent, and apply the
// parent-close policy.
#include <map>

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

// Every way a child can close reaches its parent as the matching event,
// with what the child closed with and the ids that tie it to its command.
TEST_F(ChildWorkflowTest, EachWayAChildClosesReachesTheParentAsItsOwnEvent) {
  ASSERT_TRUE(start("family").is_ok());
  v1::Command timed = start_child("kid-timed-out");
  timed.mutable_start_child_workflow_execution()->mutable_workflow_run_timeout()->set_seconds(60);
  ASSERT_TRUE(
      complete(poll_workflow().task_token(), {start_child("kid-completed"), start_child("kid-failed"),
                                              start_child("kid-canceled"), start_child("kid-terminated"), timed})
          .is_ok());
  std::map<std::string, v1::PollWorkflowTaskResponse> kids;
  for (int i = 0; i < 20 && kids.size() < 5; ++i) {
    auto kid = poll_workflow("kids");
    if (!kid.task_token().empty()) kids[kid.workflow_execution().workflow_id()] = kid;
  }
  ASSERT_EQ(kids.size(), 5u) << "every child started";

  ASSERT_TRUE(complete(kids["kid-completed"].task_token(), {complete_with("shipped")}).is_ok());
  v1::Command fail;
  fail.set_command_type(v1::COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION);
  fail.mutable_fail_workflow_execution()->mutable_failure()->set_message("no parcel");
  ASSERT_TRUE(complete(kids["kid-failed"].task_token(), {fail}).is_ok());
  for (const char* waiting : {"kid-canceled", "kid-terminated", "kid-timed-out"}) {
    ASSERT_TRUE(complete(kids[waiting].task_token(), {}).is_ok());  // each now waits
  }
  v1::RequestCancelWorkflowRequest cancel;
  cancel.mutable_workflow_execution()->set_workflow_id("kid-canceled");
  cancel.set_request_id("cancel-1");
  ASSERT_TRUE(call(&Engine::request_cancel_workflow, cancel).is_ok());
  auto asked = poll_workflow("kids");
  ASSERT_EQ(asked.workflow_execution().workflow_id(), "kid-canceled");
  v1::Command canceled;
  canceled.set_command_type(v1::COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION);
  canceled.mutable_cancel_workflow_execution()->mutable_details()->add_payloads()->set_data("as asked");
  ASSERT_TRUE(complete(asked.task_token(), {canceled}).is_ok());
  v1::TerminateWorkflowRequest terminate;
  terminate.mutable_workflow_execution()->set_workflow_id("kid-terminated");
  terminate.set_reason("operator");
  ASSERT_TRUE(call(&Engine::terminate_workflow, terminate).is_ok());
  clock_.advance(61s);  // past kid-timed-out's run timeout
  engine_->check_timers();
  EXPECT_EQ(wait_for_close("kid-timed-out").event_type(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT);

  // The parent takes tasks until it has heard of all five.
  std::map<std::string, v1::HistoryEvent> closes;
  std::map<std::string, int64_t> initiated;
  std::map<std::string, int64_t> started;
  for (int i = 0; i < 30 && closes.size() < 5; ++i) {
    auto task = poll_workflow();
    if (task.task_token().empty()) continue;
    ASSERT_EQ(task.workflow_execution().workflow_id(), "family");
    for (const auto& e : task.history().events()) {
      if (e.has_start_child_workflow_execution_initiated()) {
        initiated[e.start_child_workflow_execution_initiated().workflow_id()] = e.event_id();
      } else if (e.has_child_workflow_execution_started()) {
        started[e.child_workflow_execution_started().workflow_execution().workflow_id()] = e.event_id();
      }
      std::string kid;
      switch (e.attributes_case()) {
        case v1::HistoryEvent::kChildWorkflowExecutionCompleted:
          kid = e.child_workflow_execution_completed().workflow_execution().workflow_id();
          break;
        case v1::HistoryEvent::kChildWorkflowExecutionFailed:
          kid = e.child_workflow_execution_failed().workflow_execution().workflow_id();
          break;
        case v1::HistoryEvent::kChildWorkflowExecutionCanceled:
          kid = e.child_workflow_execution_canceled().workflow_execution().workflow_id();
          break;
        case v1::HistoryEvent::kChildWorkflowExecutionTerminated:
          kid = e.child_workflow_execution_terminated().workflow_execution().workflow_id();
          break;
        case v1::HistoryEvent::kChildWorkflowExecutionTimedOut:
          kid = e.child_workflow_execution_timed_out().workflow_execution().workflow_id();
          break;
        default:
          break;
      }
      if (!kid.empty()) closes[kid] = e;
    }
    ASSERT_TRUE(complete(task.task_token(), {}).is_ok());
  }
  ASSERT_EQ(closes.size(), 5u) << "the parent heard of every child's close";

  const auto& completed = closes["kid-completed"];
  ASSERT_TRUE(completed.has_child_workflow_execution_completed()) << completed.DebugString();
  EXPECT_EQ(completed.child_workflow_execution_completed().result().payloads(0).data(), "shipped");
  EXPECT_EQ(completed.child_workflow_execution_completed().initiated_event_id(), initiated["kid-completed"]);
  EXPECT_EQ(completed.child_workflow_execution_completed().started_event_id(), started["kid-completed"]);

  const auto& failed = closes["kid-failed"];
  ASSERT_TRUE(failed.has_child_workflow_execution_failed()) << failed.DebugString();
  EXPECT_EQ(failed.child_workflow_execution_failed().failure().message(), "no parcel");
  EXPECT_EQ(failed.child_workflow_execution_failed().initiated_event_id(), initiated["kid-failed"]);
  EXPECT_EQ(failed.child_workflow_execution_failed().started_event_id(), started["kid-failed"]);

  const auto& was_canceled = closes["kid-canceled"];
  ASSERT_TRUE(was_canceled.has_child_workflow_execution_canceled()) << was_canceled.DebugString();
  EXPECT_EQ(was_canceled.child_workflow_execution_canceled().details().payloads(0).data(), "as asked");
  EXPECT_EQ(was_canceled.child_workflow_execution_canceled().initiated_event_id(), initiated["kid-canceled"]);
  EXPECT_EQ(was_canceled.child_workflow_execution_canceled().started_event_id(), started["kid-canceled"]);

  const auto& terminated = closes["kid-terminated"];
  ASSERT_TRUE(terminated.has_child_workflow_execution_terminated()) << terminated.DebugString();
  EXPECT_EQ(terminated.child_workflow_execution_terminated().initiated_event_id(), initiated["kid-terminated"]);
  EXPECT_EQ(terminated.child_workflow_execution_terminated().started_event_id(), started["kid-terminated"]);

  const auto& timed_out = closes["kid-timed-out"];
  ASSERT_TRUE(timed_out.has_child_workflow_execution_timed_out()) << timed_out.DebugString();
  EXPECT_EQ(timed_out.child_workflow_execution_timed_out().timeout_type(), v1::TIMEOUT_TYPE_START_TO_CLOSE);
  EXPECT_EQ(timed_out.child_workflow_execution_timed_out().initiated_event_id(), initiated["kid-timed-out"]);
  EXPECT_EQ(timed_out.child_workflow_execution_timed_out().started_event_id(), started["kid-timed-out"]);
}

// The policy names the child by workflow id and is applied to that id's
// current run only if its parent is the run that closed: here the child
// closed, and its id was started again by someone else, before the parent
// heard of the close; the parent's TERMINATE must leave the stranger alone.
TEST_F(ChildPolicyRaceTest, AParentClosePolicyLeavesARunOfTheChildsIdThatIsNotItsChild) {
  // The child's close is read from its history, which must reach the gate:
  // not from the execution cache, which keeps what this engine committed.
  restart([](EngineOptions& o) { o.execution_cache_entries = 0; });
  ASSERT_TRUE(start("parent-s").is_ok());
  ASSERT_TRUE(
      complete(poll_workflow().task_token(), {start_child("kid-s", v1::PARENT_CLOSE_POLICY_TERMINATE)}).is_ok());
  auto kid = poll_workflow("kids");
  ASSERT_EQ(kid.workflow_execution().workflow_id(), "kid-s");
  ASSERT_TRUE(complete(kid.task_token(), {}).is_ok());
  auto parent = poll_workflow();  // the child has started; the parent's task stays in hand
  ASSERT_EQ(parent.workflow_execution().workflow_id(), "parent-s");

  // The child's close cannot reach the parent while its history cannot be read.
  gate_->fail_history_reads_of("kid-s");
  v1::TerminateWorkflowRequest terminate;
  terminate.mutable_workflow_execution()->set_workflow_id("kid-s");
  terminate.set_reason("operator");
  ASSERT_TRUE(call(&Engine::terminate_workflow, terminate).is_ok());
  auto stranger = start("kid-s", "stranger");  // running; its first task is never taken
  ASSERT_TRUE(stranger.is_ok()) << "the id is free again: " << stranger.status().to_string();

  ASSERT_TRUE(complete(parent.task_token(), {complete_with("bye")}).is_ok()) << "the parent closes, child open";
  // The policy's transfer task (a row of the parent's, naming the id kid-s):
  // wait until it is gone. The old kid's close stays a row of its own, as
  // its history cannot be read.
  bool policy_done = false;
  for (int i = 0; i < 200 && !policy_done; ++i) {
    auto tasks = store_->load_tasks(0, 1000);
    ASSERT_TRUE(tasks.is_ok());
    policy_done = true;
    for (const auto& t : *tasks) {
      internal::TransferTask transfer;
      if (t.kind == TaskKind::kTransfer && transfer.ParseFromString(t.payload) &&
          transfer.kind() == internal::TransferTask::KIND_PARENT_CLOSE_POLICY) {
        policy_done = false;
      }
    }
    if (!policy_done) std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(policy_done) << "the parent-close policy task was never carried out";
  gate_->fail_history_reads_of("");

  v1::DescribeWorkflowRequest describe;
  describe.mutable_workflow_execution()->set_workflow_id("kid-s");
  auto d = call(&Engine::describe_workflow, describe);
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  EXPECT_EQ(d->info().execution().run_id(), stranger->run_id());
  EXPECT_EQ(d->info().status(), v1::WORKFLOW_EXECUTION_STATUS_RUNNING)
      << "a run of the id that is not the closed parent's child keeps running";
}

// DeleteWorkflowExecution of a running parent terminates it, then deletes
// it at once: the parent-close policy for its child, a row of the parent's
// own, must outlive the delete. Here the policy's commit on the child is held
// until the delete has gone through.
TEST_F(ChildPolicyRaceTest, DeletingARunningParentStillAppliesItsParentClosePolicy) {
  ASSERT_TRUE(start("parent-d").is_ok());
  ASSERT_TRUE(
      complete(poll_workflow().task_token(), {start_child("kid-d", v1::PARENT_CLOSE_POLICY_TERMINATE)}).is_ok());
  auto kid = poll_workflow("kids");
  ASSERT_EQ(kid.workflow_execution().workflow_id(), "kid-d");
  ASSERT_TRUE(complete(kid.task_token(), {}).is_ok());  // the kid now waits for something
  auto parent = poll_workflow();                        // the parent has recorded the child's start
  ASSERT_EQ(parent.workflow_execution().workflow_id(), "parent-d");

  gate_->hold_next_commit_of("kid-d");
  v1::DeleteWorkflowExecutionRequest remove;
  remove.mutable_workflow_execution()->set_workflow_id("parent-d");
  auto deleted = call(&Engine::delete_workflow_execution, remove);
  ASSERT_TRUE(deleted.is_ok()) << deleted.status().to_string();
  EXPECT_TRUE(deleted->terminated());
  gate_->wait_until_held();  // the policy's terminate of the kid, held until the parent is gone
  gate_->release();

  EXPECT_EQ(wait_for_close("kid-d").event_type(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED)
      << "the child of a parent deleted while running keeps running";
}

}  // namespace
}  // namespace reprise::engine
