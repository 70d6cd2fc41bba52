// ExternalMachine: a signal the code sent to another workflow
// (SignalExternalWorkflowExecution) or a request that it cancel
// (RequestCancelExternalWorkflowExecution), from the command to the event
// that says the target took it or why not. Once history records the
// request it is delivered: canceling then changes nothing.
#pragma once

#include "worker/machines/command_machine.hpp"

namespace reprise::worker {

class ExternalMachine final : public FutureMachine {
 public:
  enum class State {
    kCommandCreated,  // the request to send
    kInitiated,       // ...Initiated recorded: on its way
    kDelivered,       // the target took it: the future resolved
    kFailed,          // it could not be delivered: the future failed with why
    kWithdrawn,       // canceled before it was sent: no request at all
  };
  enum class Input { kInitiated, kDelivered, kFailed, kCancel };

  static constexpr std::array<Transition<State, Input>, 4> kTable = {{
      {State::kCommandCreated, Input::kInitiated, State::kInitiated},
      {State::kCommandCreated, Input::kCancel, State::kWithdrawn},
      {State::kInitiated, Input::kDelivered, State::kDelivered},
      {State::kInitiated, Input::kFailed, State::kFailed},
  }};

  // `command` is a SignalExternalWorkflowExecution or a
  // RequestCancelExternalWorkflowExecution.
  ExternalMachine(v1::Command command, std::shared_ptr<detail::Pending> pending);

  State state() const { return state_; }
  static const char* name(State s);

  bool matches(const v1::HistoryEvent& e) const override;
  std::optional<NonDeterminism> apply(const v1::HistoryEvent& e, FutureResolver& futures) override;
  bool awaits_outcome() const override { return state_ == State::kInitiated; }
  CancelEffect cancel(FutureResolver& futures) override;

 private:
  std::optional<Input> input_of(const v1::HistoryEvent& e) const;

  State state_ = State::kCommandCreated;
};

}  // namespace reprise::worker
