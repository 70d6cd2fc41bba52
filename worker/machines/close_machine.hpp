// CloseMachine: the command that ends the run — CompleteWorkflowExecution,
// FailWorkflowExecution, CancelWorkflowExecution or
// ContinueAsNewWorkflowExecution — to the event that records it. Nothing
// waits on it: the run is over once history has it.
#pragma once

#include "worker/machines/command_machine.hpp"

namespace reprise::worker {

class CloseMachine final : public CommandMachine {
 public:
  enum class State { kCommandCreated, kRecorded };
  enum class Input { kClosed };

  static constexpr std::array<Transition<State, Input>, 1> kTable = {{
      {State::kCommandCreated, Input::kClosed, State::kRecorded},
  }};

  // `command` completes, fails, cancels or continues the run as new.
  explicit CloseMachine(v1::Command command);

  State state() const { return state_; }
  static const char* name(State s);

  bool matches(const v1::HistoryEvent& e) const override;
  std::optional<NonDeterminism> apply(const v1::HistoryEvent& e, FutureResolver& futures) override;

 private:
  State state_ = State::kCommandCreated;
};

}  // namespace reprise::worker
