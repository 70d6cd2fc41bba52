// TimerMachine: its table, the event it matches, and how it resolves or
// cancels its future.
#include "worker/machines/timer_machine.hpp"

#include <gtest/gtest.h>

#include "tests/worker/machine_test_support.hpp"
#include "worker/machines/nondeterminism.hpp"

namespace reprise::worker {
namespace {

using State = TimerMachine::State;

v1::HistoryEvent started(int64_t id, const std::string& timer_id) {
  return event(id, [&](v1::HistoryEvent& e) { e.mutable_timer_started()->set_timer_id(timer_id); });
}
v1::HistoryEvent fired(int64_t id, const std::string& timer_id) {
  return event(id, [&](v1::HistoryEvent& e) { e.mutable_timer_fired()->set_timer_id(timer_id); });
}
v1::HistoryEvent canceled(int64_t id, const std::string& timer_id) {
  return event(id, [&](v1::HistoryEvent& e) { e.mutable_timer_canceled()->set_timer_id(timer_id); });
}

class TimerMachineTest : public ::testing::Test {
 protected:
  TimerMachineTest() : pending_(future(detail::Pending::Kind::kTimer, "1")), timer_(start_timer("1"), pending_) {}

  static v1::Command start_timer(const std::string& id) {
    v1::Command c;
    c.set_command_type(v1::COMMAND_TYPE_START_TIMER);
    c.mutable_start_timer()->set_timer_id(id);
    return c;
  }

  std::shared_ptr<detail::Pending> pending_;
  TimerMachine timer_;
  RecordingResolver futures_;
};

TEST_F(TimerMachineTest, TableIsAFunction) { expect_one_row_per_state_and_input(TimerMachine::kTable); }

TEST_F(TimerMachineTest, IssuesStartTimerAndMatchesOnlyItsOwnTimerStarted) {
  EXPECT_EQ(timer_.state(), State::kStartCommandCreated);
  EXPECT_EQ(timer_.command().command_type(), v1::COMMAND_TYPE_START_TIMER);
  EXPECT_TRUE(timer_.matches(started(5, "1")));
  EXPECT_FALSE(timer_.matches(started(5, "2")));
  EXPECT_FALSE(timer_.matches(canceled(5, "1")));
}

TEST_F(TimerMachineTest, StartedThenFiredResolvesTheFutureOnce) {
  ASSERT_FALSE(timer_.apply(started(5, "1"), futures_));
  EXPECT_EQ(timer_.state(), State::kStarted);
  EXPECT_EQ(pending_->event_id, 5);
  EXPECT_TRUE(timer_.awaits_outcome());
  EXPECT_TRUE(futures_.resolved.empty());

  ASSERT_FALSE(timer_.apply(fired(9, "1"), futures_));
  EXPECT_EQ(timer_.state(), State::kFired);
  ASSERT_EQ(futures_.resolved.size(), 1u);
  EXPECT_FALSE(pending_->canceled);
  EXPECT_FALSE(timer_.awaits_outcome());
}

TEST_F(TimerMachineTest, CanceledBeforeItWasSentIsWithdrawn) {
  EXPECT_EQ(timer_.cancel(futures_), CancelEffect::kWithdrawCommand);
  EXPECT_EQ(timer_.state(), State::kWithdrawn);
  EXPECT_TRUE(pending_->ready);
  EXPECT_TRUE(pending_->canceled);
  EXPECT_FALSE(timer_.matches(started(5, "1")));
}

TEST_F(TimerMachineTest, CanceledAfterItStartedIssuesCancelTimerAndMatchesTimerCanceled) {
  ASSERT_FALSE(timer_.apply(started(5, "1"), futures_));
  EXPECT_EQ(timer_.cancel(futures_), CancelEffect::kIssueCommand);
  EXPECT_EQ(timer_.state(), State::kCancelCommandCreated);
  EXPECT_TRUE(pending_->canceled);
  ASSERT_EQ(timer_.command().command_type(), v1::COMMAND_TYPE_CANCEL_TIMER);
  EXPECT_EQ(timer_.command().cancel_timer().timer_id(), "1");
  EXPECT_TRUE(timer_.awaits_outcome()) << "a fire crossing the cancel is still its own";

  EXPECT_TRUE(timer_.matches(canceled(9, "1")));
  EXPECT_FALSE(timer_.matches(canceled(9, "2")));
  ASSERT_FALSE(timer_.apply(canceled(9, "1"), futures_));
  EXPECT_EQ(timer_.state(), State::kCanceled);
  EXPECT_FALSE(timer_.awaits_outcome());
  EXPECT_EQ(futures_.resolved.size(), 1u) << "resolved once, by the cancel";
}

TEST_F(TimerMachineTest, AFireAfterTheCodeCanceledChangesNothing) {
  ASSERT_FALSE(timer_.apply(started(5, "1"), futures_));
  ASSERT_EQ(timer_.cancel(futures_), CancelEffect::kIssueCommand);
  ASSERT_FALSE(timer_.apply(fired(8, "1"), futures_));
  EXPECT_EQ(timer_.state(), State::kFiredAfterCancel);
  EXPECT_EQ(futures_.resolved.size(), 1u);
  EXPECT_TRUE(pending_->canceled);
  EXPECT_TRUE(timer_.matches(canceled(9, "1"))) << "its CancelTimer is still to be recorded";
  ASSERT_FALSE(timer_.apply(canceled(9, "1"), futures_));
  EXPECT_EQ(timer_.state(), State::kCanceled);
}

TEST_F(TimerMachineTest, CancelingAFiredTimerChangesNothing) {
  ASSERT_FALSE(timer_.apply(started(5, "1"), futures_));
  ASSERT_FALSE(timer_.apply(fired(9, "1"), futures_));
  EXPECT_EQ(timer_.cancel(futures_), CancelEffect::kNone);
  EXPECT_EQ(timer_.state(), State::kFired);
  EXPECT_FALSE(pending_->canceled);
}

TEST_F(TimerMachineTest, AnEventItsStateTakesNotIsNonDeterminismWithTheSharedMessage) {
  ASSERT_FALSE(timer_.apply(started(5, "1"), futures_));
  ASSERT_FALSE(timer_.apply(fired(9, "1"), futures_));
  const v1::HistoryEvent again = fired(12, "1");
  std::optional<NonDeterminism> divergence = timer_.apply(again, futures_);
  ASSERT_TRUE(divergence);
  EXPECT_EQ(divergence->message, nondeterminism::refused(again, "timer 1", "fired").message);
  EXPECT_EQ(divergence->message,
            "non-determinism: history has event 12 TimerFired for timer 1 (fired), which takes no such event");
  EXPECT_EQ(futures_.resolved.size(), 1u);

  TimerMachine fresh(start_timer("2"), future(detail::Pending::Kind::kTimer, "2"));
  EXPECT_TRUE(fresh.apply(fired(3, "2"), futures_)) << "fired before it started";
  EXPECT_TRUE(fresh.apply(event(3, [](v1::HistoryEvent& e) { e.mutable_activity_task_completed(); }), futures_))
      << "another kind's event";
  EXPECT_EQ(fresh.state(), State::kStartCommandCreated);
}

}  // namespace
}  // namespace reprise::worker
