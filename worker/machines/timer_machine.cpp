#include "worker/machines/timer_machine.hpp"

#include "worker/machines/nondeterminism.hpp"

namespace reprise::worker {

namespace {

std::optional<TimerMachine::Input> timer_input_of(const v1::HistoryEvent& e) {
  switch (e.attributes_case()) {
    case v1::HistoryEvent::kTimerStarted:
      return TimerMachine::Input::kTimerStarted;
    case v1::HistoryEvent::kTimerFired:
      return TimerMachine::Input::kTimerFired;
    case v1::HistoryEvent::kTimerCanceled:
      return TimerMachine::Input::kTimerCanceled;
    default:
      return std::nullopt;
  }
}

}  // namespace

TimerMachine::TimerMachine(v1::Command command, std::shared_ptr<detail::Pending> pending)
    : FutureMachine(std::move(command), std::move(pending)), timer_id_(command_.start_timer().timer_id()) {}

const char* TimerMachine::name(State s) {
  switch (s) {
    case State::kStartCommandCreated:
      return "start command created";
    case State::kStarted:
      return "started";
    case State::kFired:
      return "fired";
    case State::kCancelCommandCreated:
      return "cancel command created";
    case State::kFiredAfterCancel:
      return "fired after cancel";
    case State::kCanceled:
      return "canceled";
    case State::kWithdrawn:
      return "withdrawn";
  }
  return "?";
}

bool TimerMachine::matches(const v1::HistoryEvent& e) const {
  switch (state_) {
    case State::kStartCommandCreated:
      return e.has_timer_started() && e.timer_started().timer_id() == timer_id_;
    case State::kCancelCommandCreated:
    case State::kFiredAfterCancel:
      return e.has_timer_canceled() && e.timer_canceled().timer_id() == timer_id_;
    default:
      return false;
  }
}

std::optional<NonDeterminism> TimerMachine::apply(const v1::HistoryEvent& e, FutureResolver& futures) {
  const std::optional<Input> input = timer_input_of(e);
  const std::optional<State> to = input ? next_state(kTable, state_, *input) : std::nullopt;
  if (!to) return nondeterminism::refused(e, "timer " + timer_id_, name(state_));
  if (*input == Input::kTimerStarted) pending_->event_id = e.event_id();
  state_ = *to;
  if (state_ == State::kFired) futures.resolve(pending_);
  return std::nullopt;
}

bool TimerMachine::awaits_outcome() const {
  return state_ == State::kStarted || state_ == State::kCancelCommandCreated;
}

CancelEffect TimerMachine::cancel(FutureResolver& futures) {
  const std::optional<State> to = next_state(kTable, state_, Input::kCancel);
  if (!to) return CancelEffect::kNone;
  state_ = *to;
  resolve_canceled(futures);
  if (state_ == State::kWithdrawn) return CancelEffect::kWithdrawCommand;
  command_.Clear();
  command_.set_command_type(v1::COMMAND_TYPE_CANCEL_TIMER);
  command_.mutable_cancel_timer()->set_timer_id(timer_id_);
  return CancelEffect::kIssueCommand;
}

}  // namespace reprise::worker
