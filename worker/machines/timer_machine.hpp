// TimerMachine: a timer the code started (ctx.sleep, a timeout), from its
// StartTimer command to TimerFired, or to TimerCanceled when the code stops
// waiting first. Its future resolves when the timer fires, or as canceled
// at once when the code cancels it.
#pragma once

#include <string>

#include "worker/machines/command_machine.hpp"

namespace reprise::worker {

class TimerMachine final : public FutureMachine {
 public:
  enum class State {
    kStartCommandCreated,   // StartTimer to send
    kStarted,               // TimerStarted recorded: waiting to fire
    kFired,                 // TimerFired: the future resolved
    kCancelCommandCreated,  // the code canceled it: CancelTimer to send
    kFiredAfterCancel,      // it fired anyway; CancelTimer is still to be recorded
    kCanceled,              // TimerCanceled recorded
    kWithdrawn,             // canceled before StartTimer was sent: no command at all
  };
  enum class Input { kTimerStarted, kTimerFired, kTimerCanceled, kCancel };

  static constexpr std::array<Transition<State, Input>, 7> kTable = {{
      {State::kStartCommandCreated, Input::kTimerStarted, State::kStarted},
      {State::kStartCommandCreated, Input::kCancel, State::kWithdrawn},
      {State::kStarted, Input::kTimerFired, State::kFired},
      {State::kStarted, Input::kCancel, State::kCancelCommandCreated},
      {State::kCancelCommandCreated, Input::kTimerCanceled, State::kCanceled},
      {State::kCancelCommandCreated, Input::kTimerFired, State::kFiredAfterCancel},
      {State::kFiredAfterCancel, Input::kTimerCanceled, State::kCanceled},
  }};

  // `command` is a StartTimer.
  TimerMachine(v1::Command command, std::shared_ptr<detail::Pending> pending);

  State state() const { return state_; }
  static const char* name(State s);

  bool matches(const v1::HistoryEvent& e) const override;
  std::optional<NonDeterminism> apply(const v1::HistoryEvent& e, FutureResolver& futures) override;
  bool awaits_outcome() const override;
  CancelEffect cancel(FutureResolver& futures) override;

 private:
  std::string timer_id_;
  State state_ = State::kStartCommandCreated;
};

}  // namespace reprise::worker
