// ChildMachine: its table, the event it matches (by type alone for an id the
// runtime derived), and how it resolves its future or ends only the wait.
#include "worker/machines/child_machine.hpp"

#include <gtest/gtest.h>

#include "tests/worker/machine_test_support.hpp"
#include "worker/machines/nondeterminism.hpp"

namespace reprise::worker {
namespace {

using State = ChildMachine::State;

v1::Command start_child(const std::string& workflow_id, const std::string& type) {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION);
  c.mutable_start_child_workflow_execution()->set_workflow_id(workflow_id);
  c.mutable_start_child_workflow_execution()->mutable_workflow_type()->set_name(type);
  return c;
}
// What the engine wrote for sum_of_squares(2) (features_children): child
// square-1 initiated as event 5, started, completed; child square-2
// initiated, started, failed (Forbidden).
v1::HistoryEvent initiated(int nth = 1) {
  return recorded_event("features_children", v1::HistoryEvent::kStartChildWorkflowExecutionInitiated, nth);
}
v1::HistoryEvent child_started(int nth = 1) {
  return recorded_event("features_children", v1::HistoryEvent::kChildWorkflowExecutionStarted, nth);
}
v1::HistoryEvent child_completed() {
  return recorded_event("features_children", v1::HistoryEvent::kChildWorkflowExecutionCompleted);
}
v1::HistoryEvent child_failed() {
  return recorded_event("features_children", v1::HistoryEvent::kChildWorkflowExecutionFailed);
}
// Its workflow id, derived from the parent's run id.
std::string square1_id() { return initiated().start_child_workflow_execution_initiated().workflow_id(); }
// The same initiation for another child id or type.
v1::HistoryEvent initiated_as(const std::string& workflow_id, const std::string& type) {
  v1::HistoryEvent e = initiated();
  e.mutable_start_child_workflow_execution_initiated()->set_workflow_id(workflow_id);
  e.mutable_start_child_workflow_execution_initiated()->mutable_workflow_type()->set_name(type);
  return e;
}
// Hand-built: no recorded history has a child that could not start yet.
v1::HistoryEvent start_failed_by_hand(int64_t id, int64_t initiated_id) {
  return event(id, [&](v1::HistoryEvent& e) {
    e.mutable_start_child_workflow_execution_failed()->set_initiated_event_id(initiated_id);
    e.mutable_start_child_workflow_execution_failed()->set_cause(v1::EXTERNAL_FAILURE_CAUSE_ALREADY_EXISTS);
  });
}

class ChildMachineTest : public ::testing::Test {
 protected:
  ChildMachineTest()
      : pending_(future(detail::Pending::Kind::kChild, square1_id())),
        child_(start_child(square1_id(), "square"), pending_, /*derived_id=*/false) {}

  void initiate() { ASSERT_FALSE(child_.apply(initiated(), futures_)); }

  std::shared_ptr<detail::Pending> pending_;
  ChildMachine child_;
  RecordingResolver futures_;
};

TEST_F(ChildMachineTest, TableIsAFunction) { expect_one_row_per_state_and_input(ChildMachine::kTable); }

TEST_F(ChildMachineTest, MatchesByIdAndTypeOrByTypeAloneWhenTheIdWasDerived) {
  EXPECT_TRUE(child_.matches(initiated()));
  EXPECT_FALSE(child_.matches(initiated(2))) << "the other child";
  EXPECT_FALSE(child_.matches(initiated_as(square1_id(), "pack")));

  ChildMachine derived(start_child("sums/square-1@run-1", "square"), future(detail::Pending::Kind::kChild, "x"), true);
  EXPECT_TRUE(derived.matches(initiated())) << "replayed under another run id";
  EXPECT_FALSE(derived.matches(initiated_as(square1_id(), "pack")));
}

TEST_F(ChildMachineTest, StartedThenCompletedResolvesWithTheResult) {
  initiate();
  EXPECT_EQ(pending_->event_id, initiated().event_id());
  ASSERT_FALSE(child_.apply(child_started(), futures_));
  EXPECT_EQ(child_.state(), State::kStarted);
  EXPECT_TRUE(futures_.resolved.empty());
  EXPECT_TRUE(child_.awaits_outcome());
  ASSERT_FALSE(child_.apply(child_completed(), futures_));
  EXPECT_EQ(child_.state(), State::kClosed);
  ASSERT_EQ(futures_.resolved.size(), 1u);
  EXPECT_EQ(pending_->result.SerializeAsString(),
            child_completed().child_workflow_execution_completed().result().SerializeAsString());
  EXPECT_FALSE(child_.awaits_outcome());
}

TEST_F(ChildMachineTest, AFailedChildOrOneThatCouldNotStartResolvesWithAChildFailure) {
  const std::string square2 = initiated(2).start_child_workflow_execution_initiated().workflow_id();
  auto failing = future(detail::Pending::Kind::kChild, square2);
  ChildMachine second(start_child(square2, "square"), failing, false);
  ASSERT_FALSE(second.apply(initiated(2), futures_));
  ASSERT_FALSE(second.apply(child_started(2), futures_));
  ASSERT_FALSE(second.apply(child_failed(), futures_));
  ASSERT_TRUE(failing->failure);
  EXPECT_EQ(failing->failure->kind(), v1::FAILURE_KIND_CHILD_WORKFLOW);
  EXPECT_EQ(failing->failure->message(), "failed: square of 2 is not allowed");
  EXPECT_EQ(failing->failure->cause().message(), "square of 2 is not allowed");
  EXPECT_EQ(failing->failure->cause().type(), "Forbidden");

  auto other = future(detail::Pending::Kind::kChild, square1_id());
  ChildMachine refused(start_child(square1_id(), "square"), other, false);
  ASSERT_FALSE(refused.apply(initiated(), futures_));
  ASSERT_FALSE(refused.apply(start_failed_by_hand(6, 5), futures_));
  EXPECT_EQ(refused.state(), State::kStartFailed);
  ASSERT_TRUE(other->failure);
  EXPECT_EQ(other->failure->message(), "could not start: a workflow with its id is already running");
}

TEST_F(ChildMachineTest, CancelingEndsOnlyTheWait) {
  EXPECT_EQ(
      ChildMachine(start_child("a", "square"), future(detail::Pending::Kind::kChild, "a"), false).cancel(futures_),
      CancelEffect::kWithdrawCommand)
      << "never sent: no child at all";

  initiate();
  EXPECT_EQ(child_.cancel(futures_), CancelEffect::kNone) << "no command: the parent-close policy covers the child";
  EXPECT_EQ(child_.state(), State::kWaitCanceled);
  EXPECT_TRUE(pending_->canceled);
  EXPECT_TRUE(child_.awaits_outcome()) << "its outcome is still its own";
  ASSERT_FALSE(child_.apply(child_started(), futures_));
  ASSERT_FALSE(child_.apply(child_completed(), futures_));
  EXPECT_EQ(child_.state(), State::kWaitCanceledClosed);
  EXPECT_EQ(pending_->result.payloads_size(), 0) << "the late outcome changes nothing";
  EXPECT_EQ(futures_.resolved.size(), 2u) << "the withdrawn one and this one, each once";
}

TEST_F(ChildMachineTest, AnEventItsStateTakesNotIsNonDeterminismWithTheSharedMessage) {
  initiate();
  ASSERT_FALSE(child_.apply(child_started(), futures_));
  // The engine never writes a second ChildWorkflowExecutionStarted: the
  // recorded one again stands for a damaged history.
  const v1::HistoryEvent twice = child_started();
  std::optional<NonDeterminism> divergence = child_.apply(twice, futures_);
  ASSERT_TRUE(divergence);
  EXPECT_EQ(divergence->message, nondeterminism::refused(twice, "child workflow " + square1_id(), "started").message);
  EXPECT_EQ(child_.state(), State::kStarted);
}

}  // namespace
}  // namespace reprise::worker
