// ExternalMachine: a signal or cancel request to another workflow — its
// table, the event it matches, and how it resolves or fails its future.
#include "worker/machines/external_machine.hpp"

#include <gtest/gtest.h>

#include "tests/worker/machine_test_support.hpp"
#include "worker/machines/nondeterminism.hpp"

namespace reprise::worker {
namespace {

using State = ExternalMachine::State;

v1::Command signal(const std::string& workflow_id, const std::string& name) {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION);
  c.mutable_signal_external_workflow_execution()->mutable_execution()->set_workflow_id(workflow_id);
  c.mutable_signal_external_workflow_execution()->set_signal_name(name);
  c.mutable_signal_external_workflow_execution()->mutable_input()->add_payloads()->set_data("value");
  return c;
}
v1::Command cancel_request(const std::string& workflow_id) {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION);
  c.mutable_request_cancel_external_workflow_execution()->mutable_execution()->set_workflow_id(workflow_id);
  return c;
}
// What the engine wrote: signal 'note' to workflow 'peer' initiated as
// event 5 and delivered (stackful_notify); signal 'bump' to 'nobody' with
// child_workflow_only, refused NOT_CHILD (features_signal_not_child); a
// cancel request to 'partner' delivered (features_tell_partner).
v1::HistoryEvent signal_initiated() {
  return recorded_event("stackful_notify", v1::HistoryEvent::kSignalExternalWorkflowExecutionInitiated);
}
v1::HistoryEvent signaled() {
  return recorded_event("stackful_notify", v1::HistoryEvent::kExternalWorkflowExecutionSignaled);
}
v1::HistoryEvent refused_initiated() {
  return recorded_event("features_signal_not_child", v1::HistoryEvent::kSignalExternalWorkflowExecutionInitiated);
}
v1::HistoryEvent signal_failed() {
  return recorded_event("features_signal_not_child", v1::HistoryEvent::kSignalExternalWorkflowExecutionFailed);
}
v1::HistoryEvent cancel_initiated() {
  return recorded_event("features_tell_partner", v1::HistoryEvent::kRequestCancelExternalWorkflowExecutionInitiated);
}
v1::HistoryEvent cancel_delivered() {
  return recorded_event("features_tell_partner", v1::HistoryEvent::kExternalWorkflowExecutionCancelRequested);
}
// The recorded signal's initiation with another target or signal name.
v1::HistoryEvent signal_initiated_as(const std::string& workflow_id, const std::string& name) {
  v1::HistoryEvent e = signal_initiated();
  e.mutable_signal_external_workflow_execution_initiated()->mutable_workflow_execution()->set_workflow_id(workflow_id);
  e.mutable_signal_external_workflow_execution_initiated()->set_signal_name(name);
  return e;
}

class ExternalMachineTest : public ::testing::Test {
 protected:
  ExternalMachineTest()
      : pending_(future(detail::Pending::Kind::kExternal, "signal 'note' to workflow 'peer'")),
        request_(signal("peer", "note"), pending_) {}

  std::shared_ptr<detail::Pending> pending_;
  ExternalMachine request_;
  RecordingResolver futures_;
};

TEST_F(ExternalMachineTest, TableIsAFunction) { expect_one_row_per_state_and_input(ExternalMachine::kTable); }

TEST_F(ExternalMachineTest, MatchesTheTargetAndSignalNameNotTheValue) {
  EXPECT_TRUE(request_.matches(signal_initiated())) << "the command's value is not the recorded one";
  EXPECT_FALSE(request_.matches(signal_initiated_as("order-8", "note")));
  EXPECT_FALSE(request_.matches(signal_initiated_as("peer", "pong")));
  EXPECT_FALSE(request_.matches(cancel_initiated()));

  ExternalMachine cancel(cancel_request("partner"), future(detail::Pending::Kind::kExternal, "cancel"));
  EXPECT_TRUE(cancel.matches(cancel_initiated()));
  EXPECT_FALSE(cancel.matches(signal_initiated_as("partner", "note")));
}

TEST_F(ExternalMachineTest, DeliveredResolvesTheFuture) {
  ASSERT_FALSE(request_.apply(signal_initiated(), futures_));
  EXPECT_EQ(pending_->event_id, signal_initiated().event_id());
  EXPECT_TRUE(request_.awaits_outcome());
  ASSERT_FALSE(request_.apply(signaled(), futures_));
  EXPECT_EQ(request_.state(), State::kDelivered);
  ASSERT_EQ(futures_.resolved.size(), 1u);
  EXPECT_FALSE(pending_->failure);
  EXPECT_FALSE(request_.awaits_outcome());
}

TEST_F(ExternalMachineTest, NotDeliveredFailsTheFutureSayingWhy) {
  auto pending = future(detail::Pending::Kind::kExternal, "signal 'bump' to workflow 'nobody'");
  ExternalMachine refused(signal("nobody", "bump"), pending);
  ASSERT_FALSE(refused.apply(refused_initiated(), futures_));
  ASSERT_FALSE(refused.apply(signal_failed(), futures_));
  EXPECT_EQ(refused.state(), State::kFailed);
  ASSERT_TRUE(pending->failure);
  EXPECT_EQ(pending->failure->type(), "NOT_CHILD");
  EXPECT_EQ(pending->failure->message(),
            "signal 'bump' to workflow 'nobody' failed: NOT_CHILD (it is not a child of this workflow)");

  // Hand-built: no recorded history has a signal to a workflow that does not
  // exist yet; the recorded refusal with the cause NOT_FOUND.
  v1::HistoryEvent not_found = signal_failed();
  not_found.mutable_signal_external_workflow_execution_failed()->set_cause(v1::EXTERNAL_FAILURE_CAUSE_NOT_FOUND);
  auto lost = future(detail::Pending::Kind::kExternal, "signal 'bump' to workflow 'nobody'");
  ExternalMachine unanswered(signal("nobody", "bump"), lost);
  ASSERT_FALSE(unanswered.apply(refused_initiated(), futures_));
  ASSERT_FALSE(unanswered.apply(not_found, futures_));
  ASSERT_TRUE(lost->failure);
  EXPECT_EQ(lost->failure->message(),
            "signal 'bump' to workflow 'nobody' failed: NOT_FOUND (no such workflow, or it is closed)");
}

TEST_F(ExternalMachineTest, ACancelRequestIsDeliveredByCancelRequested) {
  auto pending = future(detail::Pending::Kind::kExternal, "cancel request to workflow 'partner'");
  ExternalMachine cancel(cancel_request("partner"), pending);
  ASSERT_FALSE(cancel.apply(cancel_initiated(), futures_));
  EXPECT_TRUE(cancel.apply(signaled(), futures_)) << "a signal's outcome is not a cancel request's";
  ASSERT_FALSE(cancel.apply(cancel_delivered(), futures_));
  EXPECT_EQ(cancel.state(), State::kDelivered);
  EXPECT_TRUE(pending->ready);
}

TEST_F(ExternalMachineTest, CanceledBeforeItWasSentIsWithdrawnAndOnceRecordedItIsDelivered) {
  ExternalMachine unsent(signal("peer", "note"), future(detail::Pending::Kind::kExternal, "x"));
  EXPECT_EQ(unsent.cancel(futures_), CancelEffect::kWithdrawCommand);
  EXPECT_EQ(unsent.state(), State::kWithdrawn);

  ASSERT_FALSE(request_.apply(signal_initiated(), futures_));
  EXPECT_EQ(request_.cancel(futures_), CancelEffect::kNone);
  EXPECT_EQ(request_.state(), State::kInitiated);
  EXPECT_FALSE(pending_->ready) << "the request is on its way: its outcome resolves the future";
}

TEST_F(ExternalMachineTest, AnEventItsStateTakesNotIsNonDeterminismWithTheSharedMessage) {
  // The engine never writes an outcome before its request: the recorded
  // outcome fed first stands for a damaged history.
  const v1::HistoryEvent early = signaled();
  std::optional<NonDeterminism> divergence = request_.apply(early, futures_);
  ASSERT_TRUE(divergence);
  EXPECT_EQ(divergence->message,
            nondeterminism::refused(early, "signal 'note' to workflow 'peer'", "command created").message);
}

}  // namespace
}  // namespace reprise::worker
