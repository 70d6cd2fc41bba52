// TimerMachine: its table, the event it matches, and how it resolves or
// cancels its future.
#include "worker/machines/timer_machine.hpp"

#include <gtest/gtest.h>

#include "tests/worker/machine_test_support.hpp"
#include "worker/machines/nondeterminism.hpp"

namespace reprise::worker {
namespace {

using State = TimerMachine::State;

// What the engine wrote for timer 1: started and fired when the minute
// passed (features_gave_up), started and canceled when the code canceled it
// (features_charged_in_time).
v1::HistoryEvent started() { return recorded_event("features_gave_up", v1::HistoryEvent::kTimerStarted); }
v1::HistoryEvent fired() { return recorded_event("features_gave_up", v1::HistoryEvent::kTimerFired); }
v1::HistoryEvent canceled() { return recorded_event("features_charged_in_time", v1::HistoryEvent::kTimerCanceled); }
// The same event for another timer.
v1::HistoryEvent of_timer(v1::HistoryEvent e, const std::string& timer_id) {
  if (e.has_timer_started()) e.mutable_timer_started()->set_timer_id(timer_id);
  if (e.has_timer_canceled()) e.mutable_timer_canceled()->set_timer_id(timer_id);
  return e;
}
// Hand-built: a timer fired twice or before it started, which the engine
// never writes (a damaged or foreign history).
v1::HistoryEvent fired_by_hand(int64_t id, const std::string& timer_id) {
  return event(id, [&](v1::HistoryEvent& e) { e.mutable_timer_fired()->set_timer_id(timer_id); });
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
  EXPECT_TRUE(timer_.matches(started()));
  EXPECT_FALSE(timer_.matches(of_timer(started(), "2")));
  EXPECT_FALSE(timer_.matches(canceled()));
}

TEST_F(TimerMachineTest, StartedThenFiredResolvesTheFutureOnce) {
  ASSERT_FALSE(timer_.apply(started(), futures_));
  EXPECT_EQ(timer_.state(), State::kStarted);
  EXPECT_EQ(pending_->event_id, started().event_id());
  EXPECT_TRUE(timer_.awaits_outcome());
  EXPECT_TRUE(futures_.resolved.empty());

  ASSERT_FALSE(timer_.apply(fired(), futures_));
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
  EXPECT_FALSE(timer_.matches(started()));
}

TEST_F(TimerMachineTest, CanceledAfterItStartedIssuesCancelTimerAndMatchesTimerCanceled) {
  ASSERT_FALSE(timer_.apply(started(), futures_));
  EXPECT_EQ(timer_.cancel(futures_), CancelEffect::kIssueCommand);
  EXPECT_EQ(timer_.state(), State::kCancelCommandCreated);
  EXPECT_TRUE(pending_->canceled);
  ASSERT_EQ(timer_.command().command_type(), v1::COMMAND_TYPE_CANCEL_TIMER);
  EXPECT_EQ(timer_.command().cancel_timer().timer_id(), "1");
  EXPECT_TRUE(timer_.awaits_outcome()) << "a fire crossing the cancel is still its own";

  EXPECT_TRUE(timer_.matches(canceled()));
  EXPECT_FALSE(timer_.matches(of_timer(canceled(), "2")));
  ASSERT_FALSE(timer_.apply(canceled(), futures_));
  EXPECT_EQ(timer_.state(), State::kCanceled);
  EXPECT_FALSE(timer_.awaits_outcome());
  EXPECT_EQ(futures_.resolved.size(), 1u) << "resolved once, by the cancel";
}

// A fire crossing the cancel (it reaches the instance after the code
// canceled, before the CancelTimer is recorded): the recorder does not make
// that crossing, so the two events come from separate recorded runs.
TEST_F(TimerMachineTest, AFireAfterTheCodeCanceledChangesNothing) {
  ASSERT_FALSE(timer_.apply(started(), futures_));
  ASSERT_EQ(timer_.cancel(futures_), CancelEffect::kIssueCommand);
  ASSERT_FALSE(timer_.apply(fired(), futures_));
  EXPECT_EQ(timer_.state(), State::kFiredAfterCancel);
  EXPECT_EQ(futures_.resolved.size(), 1u);
  EXPECT_TRUE(pending_->canceled);
  EXPECT_TRUE(timer_.matches(canceled())) << "its CancelTimer is still to be recorded";
  ASSERT_FALSE(timer_.apply(canceled(), futures_));
  EXPECT_EQ(timer_.state(), State::kCanceled);
}

TEST_F(TimerMachineTest, CancelingAFiredTimerChangesNothing) {
  ASSERT_FALSE(timer_.apply(started(), futures_));
  ASSERT_FALSE(timer_.apply(fired(), futures_));
  EXPECT_EQ(timer_.cancel(futures_), CancelEffect::kNone);
  EXPECT_EQ(timer_.state(), State::kFired);
  EXPECT_FALSE(pending_->canceled);
}

TEST_F(TimerMachineTest, AnEventItsStateTakesNotIsNonDeterminismWithTheSharedMessage) {
  ASSERT_FALSE(timer_.apply(started(), futures_));
  ASSERT_FALSE(timer_.apply(fired(), futures_));
  const v1::HistoryEvent again = fired_by_hand(12, "1");
  std::optional<NonDeterminism> divergence = timer_.apply(again, futures_);
  ASSERT_TRUE(divergence);
  EXPECT_EQ(divergence->message, nondeterminism::refused(again, "timer 1", "fired").message);
  EXPECT_EQ(divergence->message,
            "non-determinism: history has event 12 TimerFired for timer 1 (fired), which takes no such event");
  EXPECT_EQ(futures_.resolved.size(), 1u);

  TimerMachine fresh(start_timer("2"), future(detail::Pending::Kind::kTimer, "2"));
  EXPECT_TRUE(fresh.apply(fired_by_hand(3, "2"), futures_)) << "fired before it started";
  EXPECT_TRUE(
      fresh.apply(recorded_event("features_charged_in_time", v1::HistoryEvent::kActivityTaskCompleted), futures_))
      << "another kind's event";
  EXPECT_EQ(fresh.state(), State::kStartCommandCreated);
}

}  // namespace
}  // namespace reprise::worker
