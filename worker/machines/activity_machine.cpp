#include "worker/machines/activity_machine.hpp"

#include "worker/machines/nondeterminism.hpp"

namespace reprise::worker {

namespace {

std::optional<ActivityMachine::Input> activity_input_of(const v1::HistoryEvent& e) {
  switch (e.attributes_case()) {
    case v1::HistoryEvent::kActivityTaskScheduled:
      return ActivityMachine::Input::kScheduled;
    case v1::HistoryEvent::kActivityTaskCompleted:
      return ActivityMachine::Input::kCompleted;
    case v1::HistoryEvent::kActivityTaskFailed:
      return ActivityMachine::Input::kFailed;
    case v1::HistoryEvent::kActivityTaskTimedOut:
      return ActivityMachine::Input::kTimedOut;
    case v1::HistoryEvent::kActivityTaskCanceled:
      return ActivityMachine::Input::kCanceled;
    case v1::HistoryEvent::kActivityTaskCancelRequested:
      return ActivityMachine::Input::kCancelRequested;
    default:
      return std::nullopt;
  }
}

}  // namespace

ActivityMachine::ActivityMachine(v1::Command command, std::shared_ptr<detail::Pending> pending)
    : FutureMachine(std::move(command), std::move(pending)),
      activity_id_(command_.schedule_activity_task().activity_id()),
      activity_type_(command_.schedule_activity_task().activity_type().name()) {}

const char* ActivityMachine::name(State s) {
  switch (s) {
    case State::kScheduleCommandCreated:
      return "schedule command created";
    case State::kScheduled:
      return "scheduled";
    case State::kCompleted:
      return "completed";
    case State::kFailed:
      return "failed";
    case State::kTimedOut:
      return "timed out";
    case State::kCanceled:
      return "canceled";
    case State::kCancelCommandCreated:
      return "cancel command created";
    case State::kCancelRecorded:
      return "cancel recorded";
    case State::kEndedBeforeCancelRecorded:
      return "ended before its cancel was recorded";
    case State::kWithdrawn:
      return "withdrawn";
  }
  return "?";
}

bool ActivityMachine::matches(const v1::HistoryEvent& e) const {
  switch (state_) {
    case State::kScheduleCommandCreated:
      return e.has_activity_task_scheduled() && e.activity_task_scheduled().activity_id() == activity_id_ &&
             e.activity_task_scheduled().activity_type().name() == activity_type_;
    case State::kCancelCommandCreated:
    case State::kEndedBeforeCancelRecorded:
      return e.has_activity_task_cancel_requested() &&
             e.activity_task_cancel_requested().scheduled_event_id() == pending_->event_id;
    default:
      return false;
  }
}

std::optional<NonDeterminism> ActivityMachine::apply(const v1::HistoryEvent& e, FutureResolver& futures) {
  const std::optional<Input> input = activity_input_of(e);
  const std::optional<State> to = input ? next_state(kTable, state_, *input) : std::nullopt;
  if (!to) return nondeterminism::refused(e, "activity " + activity_id_ + " '" + activity_type_ + "'", name(state_));
  const State from = state_;
  state_ = *to;
  if (*input == Input::kScheduled) pending_->event_id = e.event_id();
  if (from != State::kScheduled) return std::nullopt;  // scheduled now, or canceled by the code: no resolution
  switch (*input) {
    case Input::kCompleted:
      pending_->result = e.activity_task_completed().result();
      futures.resolve(pending_);
      break;
    case Input::kFailed:
      pending_->failure = e.activity_task_failed().failure();
      futures.resolve(pending_);
      break;
    case Input::kTimedOut:
      pending_->failure = e.activity_task_timed_out().failure();
      futures.resolve(pending_);
      break;
    case Input::kCanceled:
      resolve_canceled(futures);
      break;
    default:
      break;
  }
  return std::nullopt;
}

bool ActivityMachine::awaits_outcome() const {
  return state_ == State::kScheduled || state_ == State::kCancelCommandCreated || state_ == State::kCancelRecorded;
}

CancelEffect ActivityMachine::cancel(FutureResolver& futures) {
  const std::optional<State> to = next_state(kTable, state_, Input::kCancel);
  if (!to) return CancelEffect::kNone;
  state_ = *to;
  resolve_canceled(futures);
  if (state_ == State::kWithdrawn) return CancelEffect::kWithdrawCommand;
  // Try-cancel: the activity learns of it at its next heartbeat.
  command_.Clear();
  command_.set_command_type(v1::COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK);
  command_.mutable_request_cancel_activity_task()->set_scheduled_event_id(pending_->event_id);
  return CancelEffect::kIssueCommand;
}

}  // namespace reprise::worker
