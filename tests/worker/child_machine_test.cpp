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
v1::HistoryEvent initiated(int64_t id, const std::string& workflow_id, const std::string& type) {
  return event(id, [&](v1::HistoryEvent& e) {
    e.mutable_start_child_workflow_execution_initiated()->set_workflow_id(workflow_id);
    e.mutable_start_child_workflow_execution_initiated()->mutable_workflow_type()->set_name(type);
  });
}
v1::HistoryEvent child_started(int64_t id, int64_t initiated_id) {
  return event(id, [&](v1::HistoryEvent& e) {
    e.mutable_child_workflow_execution_started()->set_initiated_event_id(initiated_id);
  });
}
v1::HistoryEvent child_completed(int64_t id, int64_t initiated_id) {
  return event(id, [&](v1::HistoryEvent& e) {
    e.mutable_child_workflow_execution_completed()->set_initiated_event_id(initiated_id);
    e.mutable_child_workflow_execution_completed()->mutable_result()->add_payloads()->set_data("shipped");
  });
}
v1::HistoryEvent child_failed(int64_t id, int64_t initiated_id) {
  return event(id, [&](v1::HistoryEvent& e) {
    e.mutable_child_workflow_execution_failed()->set_initiated_event_id(initiated_id);
    e.mutable_child_workflow_execution_failed()->mutable_failure()->set_message("out of stock");
  });
}
v1::HistoryEvent start_failed(int64_t id, int64_t initiated_id) {
  return event(id, [&](v1::HistoryEvent& e) {
    e.mutable_start_child_workflow_execution_failed()->set_initiated_event_id(initiated_id);
    e.mutable_start_child_workflow_execution_failed()->set_cause(v1::EXTERNAL_FAILURE_CAUSE_ALREADY_EXISTS);
  });
}

class ChildMachineTest : public ::testing::Test {
 protected:
  ChildMachineTest()
      : pending_(future(detail::Pending::Kind::kChild, "ship-7")),
        child_(start_child("ship-7", "ship"), pending_, /*derived_id=*/false) {}

  void initiate() { ASSERT_FALSE(child_.apply(initiated(5, "ship-7", "ship"), futures_)); }

  std::shared_ptr<detail::Pending> pending_;
  ChildMachine child_;
  RecordingResolver futures_;
};

TEST_F(ChildMachineTest, TableIsAFunction) { expect_one_row_per_state_and_input(ChildMachine::kTable); }

TEST_F(ChildMachineTest, MatchesByIdAndTypeOrByTypeAloneWhenTheIdWasDerived) {
  EXPECT_TRUE(child_.matches(initiated(5, "ship-7", "ship")));
  EXPECT_FALSE(child_.matches(initiated(5, "ship-8", "ship")));
  EXPECT_FALSE(child_.matches(initiated(5, "ship-7", "pack")));

  ChildMachine derived(start_child("order-1/ship-1@run-1", "ship"), future(detail::Pending::Kind::kChild, "x"), true);
  EXPECT_TRUE(derived.matches(initiated(5, "order-9/ship-1@run-2", "ship"))) << "replayed under another workflow id";
  EXPECT_FALSE(derived.matches(initiated(5, "order-9/ship-1@run-2", "pack")));
}

TEST_F(ChildMachineTest, StartedThenCompletedResolvesWithTheResult) {
  initiate();
  EXPECT_EQ(pending_->event_id, 5);
  ASSERT_FALSE(child_.apply(child_started(6, 5), futures_));
  EXPECT_EQ(child_.state(), State::kStarted);
  EXPECT_TRUE(futures_.resolved.empty());
  EXPECT_TRUE(child_.awaits_outcome());
  ASSERT_FALSE(child_.apply(child_completed(9, 5), futures_));
  EXPECT_EQ(child_.state(), State::kClosed);
  ASSERT_EQ(futures_.resolved.size(), 1u);
  EXPECT_EQ(pending_->result.payloads(0).data(), "shipped");
  EXPECT_FALSE(child_.awaits_outcome());
}

TEST_F(ChildMachineTest, AFailedChildOrOneThatCouldNotStartResolvesWithAChildFailure) {
  initiate();
  ASSERT_FALSE(child_.apply(child_started(6, 5), futures_));
  ASSERT_FALSE(child_.apply(child_failed(9, 5), futures_));
  ASSERT_TRUE(pending_->failure);
  EXPECT_EQ(pending_->failure->kind(), v1::FAILURE_KIND_CHILD_WORKFLOW);
  EXPECT_EQ(pending_->failure->message(), "failed: out of stock");
  EXPECT_EQ(pending_->failure->cause().message(), "out of stock");

  auto other = future(detail::Pending::Kind::kChild, "ship-7");
  ChildMachine refused(start_child("ship-7", "ship"), other, false);
  ASSERT_FALSE(refused.apply(initiated(5, "ship-7", "ship"), futures_));
  ASSERT_FALSE(refused.apply(start_failed(6, 5), futures_));
  EXPECT_EQ(refused.state(), State::kStartFailed);
  ASSERT_TRUE(other->failure);
  EXPECT_EQ(other->failure->message(), "could not start: a workflow with its id is already running");
}

TEST_F(ChildMachineTest, CancelingEndsOnlyTheWait) {
  EXPECT_EQ(ChildMachine(start_child("a", "ship"), future(detail::Pending::Kind::kChild, "a"), false).cancel(futures_),
            CancelEffect::kWithdrawCommand)
      << "never sent: no child at all";

  initiate();
  EXPECT_EQ(child_.cancel(futures_), CancelEffect::kNone) << "no command: the parent-close policy covers the child";
  EXPECT_EQ(child_.state(), State::kWaitCanceled);
  EXPECT_TRUE(pending_->canceled);
  EXPECT_TRUE(child_.awaits_outcome()) << "its outcome is still its own";
  ASSERT_FALSE(child_.apply(child_started(6, 5), futures_));
  ASSERT_FALSE(child_.apply(child_completed(9, 5), futures_));
  EXPECT_EQ(child_.state(), State::kWaitCanceledClosed);
  EXPECT_EQ(pending_->result.payloads_size(), 0) << "the late outcome changes nothing";
  EXPECT_EQ(futures_.resolved.size(), 2u) << "the withdrawn one and this one, each once";
}

TEST_F(ChildMachineTest, AnEventItsStateTakesNotIsNonDeterminismWithTheSharedMessage) {
  initiate();
  ASSERT_FALSE(child_.apply(child_started(6, 5), futures_));
  const v1::HistoryEvent twice = child_started(7, 5);
  std::optional<NonDeterminism> divergence = child_.apply(twice, futures_);
  ASSERT_TRUE(divergence);
  EXPECT_EQ(divergence->message, nondeterminism::refused(twice, "child workflow ship-7", "started").message);
  EXPECT_EQ(child_.state(), State::kStarted);
}

}  // namespace
}  // namespace reprise::worker
