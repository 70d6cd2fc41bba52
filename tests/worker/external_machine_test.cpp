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
v1::HistoryEvent signal_initiated(int64_t id, const std::string& workflow_id, const std::string& name) {
  return event(id, [&](v1::HistoryEvent& e) {
    e.mutable_signal_external_workflow_execution_initiated()->mutable_workflow_execution()->set_workflow_id(
        workflow_id);
    e.mutable_signal_external_workflow_execution_initiated()->set_signal_name(name);
  });
}
v1::HistoryEvent signaled(int64_t id, int64_t initiated_id) {
  return event(id, [&](v1::HistoryEvent& e) {
    e.mutable_external_workflow_execution_signaled()->set_initiated_event_id(initiated_id);
  });
}
v1::HistoryEvent signal_failed(int64_t id, int64_t initiated_id) {
  return event(id, [&](v1::HistoryEvent& e) {
    e.mutable_signal_external_workflow_execution_failed()->set_initiated_event_id(initiated_id);
    e.mutable_signal_external_workflow_execution_failed()->set_cause(v1::EXTERNAL_FAILURE_CAUSE_NOT_FOUND);
  });
}
v1::HistoryEvent cancel_initiated(int64_t id, const std::string& workflow_id) {
  return event(id, [&](v1::HistoryEvent& e) {
    e.mutable_request_cancel_external_workflow_execution_initiated()->mutable_workflow_execution()->set_workflow_id(
        workflow_id);
  });
}
v1::HistoryEvent cancel_delivered(int64_t id, int64_t initiated_id) {
  return event(id, [&](v1::HistoryEvent& e) {
    e.mutable_external_workflow_execution_cancel_requested()->set_initiated_event_id(initiated_id);
  });
}

class ExternalMachineTest : public ::testing::Test {
 protected:
  ExternalMachineTest()
      : pending_(future(detail::Pending::Kind::kExternal, "signal 'ping' to workflow 'order-7'")),
        request_(signal("order-7", "ping"), pending_) {}

  std::shared_ptr<detail::Pending> pending_;
  ExternalMachine request_;
  RecordingResolver futures_;
};

TEST_F(ExternalMachineTest, TableIsAFunction) { expect_one_row_per_state_and_input(ExternalMachine::kTable); }

TEST_F(ExternalMachineTest, MatchesTheTargetAndSignalNameNotTheValue) {
  EXPECT_TRUE(request_.matches(signal_initiated(5, "order-7", "ping")));
  EXPECT_FALSE(request_.matches(signal_initiated(5, "order-8", "ping")));
  EXPECT_FALSE(request_.matches(signal_initiated(5, "order-7", "pong")));
  EXPECT_FALSE(request_.matches(cancel_initiated(5, "order-7")));

  ExternalMachine cancel(cancel_request("order-7"), future(detail::Pending::Kind::kExternal, "cancel"));
  EXPECT_TRUE(cancel.matches(cancel_initiated(5, "order-7")));
  EXPECT_FALSE(cancel.matches(signal_initiated(5, "order-7", "ping")));
}

TEST_F(ExternalMachineTest, DeliveredResolvesTheFuture) {
  ASSERT_FALSE(request_.apply(signal_initiated(5, "order-7", "ping"), futures_));
  EXPECT_EQ(pending_->event_id, 5);
  EXPECT_TRUE(request_.awaits_outcome());
  ASSERT_FALSE(request_.apply(signaled(8, 5), futures_));
  EXPECT_EQ(request_.state(), State::kDelivered);
  ASSERT_EQ(futures_.resolved.size(), 1u);
  EXPECT_FALSE(pending_->failure);
  EXPECT_FALSE(request_.awaits_outcome());
}

TEST_F(ExternalMachineTest, NotDeliveredFailsTheFutureSayingWhy) {
  ASSERT_FALSE(request_.apply(signal_initiated(5, "order-7", "ping"), futures_));
  ASSERT_FALSE(request_.apply(signal_failed(8, 5), futures_));
  EXPECT_EQ(request_.state(), State::kFailed);
  ASSERT_TRUE(pending_->failure);
  EXPECT_EQ(pending_->failure->type(), "NOT_FOUND");
  EXPECT_EQ(pending_->failure->message(),
            "signal 'ping' to workflow 'order-7' failed: NOT_FOUND (no such workflow, or it is closed)");
}

TEST_F(ExternalMachineTest, ACancelRequestIsDeliveredByCancelRequested) {
  auto pending = future(detail::Pending::Kind::kExternal, "cancel request to workflow 'order-7'");
  ExternalMachine cancel(cancel_request("order-7"), pending);
  ASSERT_FALSE(cancel.apply(cancel_initiated(5, "order-7"), futures_));
  EXPECT_TRUE(cancel.apply(signaled(8, 5), futures_)) << "a signal's outcome is not a cancel request's";
  ASSERT_FALSE(cancel.apply(cancel_delivered(8, 5), futures_));
  EXPECT_EQ(cancel.state(), State::kDelivered);
  EXPECT_TRUE(pending->ready);
}

TEST_F(ExternalMachineTest, CanceledBeforeItWasSentIsWithdrawnAndOnceRecordedItIsDelivered) {
  ExternalMachine unsent(signal("order-7", "ping"), future(detail::Pending::Kind::kExternal, "x"));
  EXPECT_EQ(unsent.cancel(futures_), CancelEffect::kWithdrawCommand);
  EXPECT_EQ(unsent.state(), State::kWithdrawn);

  ASSERT_FALSE(request_.apply(signal_initiated(5, "order-7", "ping"), futures_));
  EXPECT_EQ(request_.cancel(futures_), CancelEffect::kNone);
  EXPECT_EQ(request_.state(), State::kInitiated);
  EXPECT_FALSE(pending_->ready) << "the request is on its way: its outcome resolves the future";
}

TEST_F(ExternalMachineTest, AnEventItsStateTakesNotIsNonDeterminismWithTheSharedMessage) {
  const v1::HistoryEvent early = signaled(4, 5);
  std::optional<NonDeterminism> divergence = request_.apply(early, futures_);
  ASSERT_TRUE(divergence);
  EXPECT_EQ(divergence->message,
            nondeterminism::refused(early, "signal 'ping' to workflow 'order-7'", "command created").message);
}

}  // namespace
}  // namespace reprise::worker
