// ChildMachine: a child workflow the code started, from its
// StartChildWorkflowExecution command to the child's close (or the server's
// refusal to start it). Canceling ends only the wait: the child runs on
// until its parent-close policy stops it, and its late outcome changes
// nothing.
#pragma once

#include <string>

#include "worker/machines/command_machine.hpp"

namespace reprise::worker {

class ChildMachine final : public FutureMachine {
 public:
  enum class State {
    kStartCommandCreated,  // StartChildWorkflowExecution to send
    kInitiated,            // StartChildWorkflowExecutionInitiated recorded
    kStarted,              // ChildWorkflowExecutionStarted: the child runs
    kStartFailed,          // the server did not start it: the future failed
    kClosed,               // the child closed: the future resolved with how
    kWaitCanceled,         // the code stopped waiting; the child's outcome is still to come
    kWaitCanceledClosed,   // ... and came
    kWithdrawn,            // canceled before the command was sent: no child at all
  };
  // kClosed: completed, failed, canceled, timed out or terminated.
  enum class Input { kInitiated, kStarted, kStartFailed, kClosed, kCancel };

  static constexpr std::array<Transition<State, Input>, 11> kTable = {{
      {State::kStartCommandCreated, Input::kInitiated, State::kInitiated},
      {State::kStartCommandCreated, Input::kCancel, State::kWithdrawn},
      {State::kInitiated, Input::kStarted, State::kStarted},
      {State::kInitiated, Input::kStartFailed, State::kStartFailed},
      {State::kInitiated, Input::kClosed, State::kClosed},
      {State::kInitiated, Input::kCancel, State::kWaitCanceled},
      {State::kStarted, Input::kClosed, State::kClosed},
      {State::kStarted, Input::kCancel, State::kWaitCanceled},
      {State::kWaitCanceled, Input::kStarted, State::kWaitCanceled},
      {State::kWaitCanceled, Input::kStartFailed, State::kWaitCanceledClosed},
      {State::kWaitCanceled, Input::kClosed, State::kWaitCanceledClosed},
  }};

  // `command` is a StartChildWorkflowExecution; `derived_id` when the
  // runtime made its workflow id (not the code), so replay under another
  // workflow id (the replay tester) matches it by type alone.
  ChildMachine(v1::Command command, std::shared_ptr<detail::Pending> pending, bool derived_id);

  State state() const { return state_; }
  static const char* name(State s);

  bool matches(const v1::HistoryEvent& e) const override;
  std::optional<NonDeterminism> apply(const v1::HistoryEvent& e, FutureResolver& futures) override;
  bool awaits_outcome() const override;
  CancelEffect cancel(FutureResolver& futures) override;

 private:
  bool derived_id_;
  State state_ = State::kStartCommandCreated;
};

}  // namespace reprise::worker
