// ActivityMachine: its table, the events it matches, and how it resolves or
// try-cancels its future.
#include "worker/machines/activity_machine.hpp"

#include <gtest/gtest.h>

#include "tests/worker/machine_test_support.hpp"
#include "worker/machines/nondeterminism.hpp"

namespace reprise::worker {
namespace {

using State = ActivityMachine::State;

v1::Command schedule(const std::string& id, const std::string& type) {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK);
  c.mutable_schedule_activity_task()->set_activity_id(id);
  c.mutable_schedule_activity_task()->mutable_activity_type()->set_name(type);
  return c;
}
// What the engine wrote for activity 1 'charge', scheduled as event 5:
// completed after an ActivityTaskStarted (features_charged_in_time), failed
// for good (checkout_declined), and asked to cancel before any worker took
// it, then canceled (features_gave_up).
v1::HistoryEvent scheduled() {
  return recorded_event("features_charged_in_time", v1::HistoryEvent::kActivityTaskScheduled);
}
v1::HistoryEvent completed() {
  return recorded_event("features_charged_in_time", v1::HistoryEvent::kActivityTaskCompleted);
}
v1::HistoryEvent failed() { return recorded_event("checkout_declined", v1::HistoryEvent::kActivityTaskFailed); }
v1::HistoryEvent cancel_requested() {
  return recorded_event("features_gave_up", v1::HistoryEvent::kActivityTaskCancelRequested);
}
v1::HistoryEvent canceled() { return recorded_event("features_gave_up", v1::HistoryEvent::kActivityTaskCanceled); }
// The same event for another activity.
v1::HistoryEvent of_activity(v1::HistoryEvent e, const std::string& activity_id, const std::string& type) {
  e.mutable_activity_task_scheduled()->set_activity_id(activity_id);
  e.mutable_activity_task_scheduled()->mutable_activity_type()->set_name(type);
  return e;
}
v1::HistoryEvent for_scheduled(v1::HistoryEvent e, int64_t scheduled_id) {
  e.mutable_activity_task_cancel_requested()->set_scheduled_event_id(scheduled_id);
  return e;
}
// Hand-built: no recorded history has a timeout yet (the recorder does not
// move the clock past an activity's timeout), and the engine never writes an
// outcome before its ActivityTaskScheduled or a second outcome.
v1::HistoryEvent timed_out_by_hand(int64_t id, int64_t scheduled_id) {
  return event(id, [&](v1::HistoryEvent& e) {
    e.mutable_activity_task_timed_out()->set_scheduled_event_id(scheduled_id);
    e.mutable_activity_task_timed_out()->mutable_failure()->set_message("start-to-close");
  });
}
v1::HistoryEvent completed_by_hand(int64_t id, int64_t scheduled_id) {
  return event(id,
               [&](v1::HistoryEvent& e) { e.mutable_activity_task_completed()->set_scheduled_event_id(scheduled_id); });
}
v1::HistoryEvent scheduled_by_hand(int64_t id, const std::string& activity_id, const std::string& type) {
  return event(id, [&](v1::HistoryEvent& e) {
    e.mutable_activity_task_scheduled()->set_activity_id(activity_id);
    e.mutable_activity_task_scheduled()->mutable_activity_type()->set_name(type);
  });
}

class ActivityMachineTest : public ::testing::Test {
 protected:
  ActivityMachineTest()
      : pending_(future(detail::Pending::Kind::kActivity, "charge")), activity_(schedule("1", "charge"), pending_) {}

  void schedule_it() { ASSERT_FALSE(activity_.apply(scheduled(), futures_)); }

  std::shared_ptr<detail::Pending> pending_;
  ActivityMachine activity_;
  RecordingResolver futures_;
};

TEST_F(ActivityMachineTest, TableIsAFunction) { expect_one_row_per_state_and_input(ActivityMachine::kTable); }

TEST_F(ActivityMachineTest, MatchesItsScheduledEventByIdAndType) {
  EXPECT_TRUE(activity_.matches(scheduled()));
  EXPECT_FALSE(activity_.matches(of_activity(scheduled(), "1", "ship")));
  EXPECT_FALSE(activity_.matches(of_activity(scheduled(), "2", "charge")));
  EXPECT_FALSE(activity_.matches(cancel_requested()));
}

TEST_F(ActivityMachineTest, CompletedResolvesWithTheResult) {
  schedule_it();
  EXPECT_EQ(activity_.state(), State::kScheduled);
  EXPECT_EQ(pending_->event_id, 5);
  EXPECT_TRUE(activity_.awaits_outcome());
  ASSERT_FALSE(activity_.apply(completed(), futures_));
  EXPECT_EQ(activity_.state(), State::kCompleted);
  ASSERT_EQ(futures_.resolved.size(), 1u);
  EXPECT_EQ(pending_->result.SerializeAsString(), completed().activity_task_completed().result().SerializeAsString());
  EXPECT_FALSE(pending_->failure);
  EXPECT_FALSE(activity_.awaits_outcome());
}

TEST_F(ActivityMachineTest, FailedAndTimedOutResolveWithTheFailure) {
  schedule_it();
  ASSERT_FALSE(activity_.apply(failed(), futures_));
  EXPECT_EQ(activity_.state(), State::kFailed);
  ASSERT_TRUE(pending_->failure);
  EXPECT_EQ(pending_->failure->message(), "card declined");
  EXPECT_EQ(pending_->failure->type(), "CardDeclined");

  auto other = future(detail::Pending::Kind::kActivity, "charge");
  ActivityMachine slow(schedule("2", "charge"), other);
  ASSERT_FALSE(slow.apply(scheduled_by_hand(6, "2", "charge"), futures_));
  ASSERT_FALSE(slow.apply(timed_out_by_hand(10, 6), futures_));
  EXPECT_EQ(slow.state(), State::kTimedOut);
  ASSERT_TRUE(other->failure);
  EXPECT_EQ(other->failure->message(), "start-to-close");
  EXPECT_EQ(futures_.resolved.size(), 2u);
}

TEST_F(ActivityMachineTest, CanceledBeforeItWasSentIsWithdrawn) {
  EXPECT_EQ(activity_.cancel(futures_), CancelEffect::kWithdrawCommand);
  EXPECT_EQ(activity_.state(), State::kWithdrawn);
  EXPECT_TRUE(pending_->ready && pending_->canceled);
}

TEST_F(ActivityMachineTest, TryCancelResolvesAtOnceAndTheLateOutcomeChangesNothing) {
  schedule_it();
  EXPECT_EQ(activity_.cancel(futures_), CancelEffect::kIssueCommand);
  EXPECT_TRUE(pending_->ready && pending_->canceled);
  ASSERT_EQ(activity_.command().command_type(), v1::COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK);
  EXPECT_EQ(activity_.command().request_cancel_activity_task().scheduled_event_id(), 5);
  EXPECT_TRUE(activity_.matches(cancel_requested()));
  EXPECT_FALSE(activity_.matches(for_scheduled(cancel_requested(), 6)));

  ASSERT_FALSE(activity_.apply(cancel_requested(), futures_));
  EXPECT_EQ(activity_.state(), State::kCancelRecorded);
  EXPECT_TRUE(activity_.awaits_outcome());
  ASSERT_FALSE(activity_.apply(completed(), futures_));
  EXPECT_EQ(activity_.state(), State::kCanceled);
  EXPECT_EQ(futures_.resolved.size(), 1u);
  EXPECT_TRUE(pending_->canceled);
  EXPECT_EQ(pending_->result.payloads_size(), 0);
}

TEST_F(ActivityMachineTest, AnOutcomeBeforeTheCancelIsRecordedChangesNothing) {
  schedule_it();
  ASSERT_EQ(activity_.cancel(futures_), CancelEffect::kIssueCommand);
  ASSERT_FALSE(activity_.apply(failed(), futures_));
  EXPECT_EQ(activity_.state(), State::kEndedBeforeCancelRecorded);
  EXPECT_FALSE(activity_.awaits_outcome());
  EXPECT_FALSE(pending_->failure);
  EXPECT_TRUE(activity_.matches(cancel_requested()));
  ASSERT_FALSE(activity_.apply(cancel_requested(), futures_));
  EXPECT_EQ(activity_.state(), State::kCanceled);
}

TEST_F(ActivityMachineTest, ActivityTaskCanceledResolvesAsCanceled) {
  schedule_it();
  ASSERT_FALSE(activity_.apply(canceled(), futures_));
  EXPECT_EQ(activity_.state(), State::kCanceled);
  EXPECT_TRUE(pending_->ready && pending_->canceled);
}

TEST_F(ActivityMachineTest, AnEventItsStateTakesNotIsNonDeterminismWithTheSharedMessage) {
  const v1::HistoryEvent early = completed_by_hand(4, 5);
  std::optional<NonDeterminism> divergence = activity_.apply(early, futures_);
  ASSERT_TRUE(divergence) << "completed before it was scheduled";
  EXPECT_EQ(divergence->message,
            nondeterminism::refused(early, "activity 1 'charge'", "schedule command created").message);
  EXPECT_EQ(activity_.state(), State::kScheduleCommandCreated);

  schedule_it();
  ASSERT_FALSE(activity_.apply(completed(), futures_));
  const v1::HistoryEvent twice = completed_by_hand(10, 5);
  divergence = activity_.apply(twice, futures_);
  ASSERT_TRUE(divergence);
  EXPECT_EQ(divergence->message,
            "non-determinism: history has event 10 ActivityTaskCompleted for activity 1 'charge' (completed), "
            "which takes no such event");
  EXPECT_EQ(futures_.resolved.size(), 1u);
}

}  // namespace
}  // namespace reprise::worker
