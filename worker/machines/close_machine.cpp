#include "worker/machines/close_machine.hpp"

#include "worker/machines/nondeterminism.hpp"

namespace reprise::worker {

namespace {

// The close event each close command records.
v1::HistoryEvent::AttributesCase recorded_as(const v1::Command& c) {
  switch (c.attributes_case()) {
    case v1::Command::kCompleteWorkflowExecution:
      return v1::HistoryEvent::kWorkflowExecutionCompleted;
    case v1::Command::kFailWorkflowExecution:
      return v1::HistoryEvent::kWorkflowExecutionFailed;
    case v1::Command::kCancelWorkflowExecution:
      return v1::HistoryEvent::kWorkflowExecutionCanceled;
    case v1::Command::kContinueAsNewWorkflowExecution:
      return v1::HistoryEvent::kWorkflowExecutionContinuedAsNew;
    default:
      return v1::HistoryEvent::ATTRIBUTES_NOT_SET;
  }
}

}  // namespace

CloseMachine::CloseMachine(v1::Command command) : CommandMachine(std::move(command), nullptr) {}

const char* CloseMachine::name(State s) {
  switch (s) {
    case State::kCommandCreated:
      return "command created";
    case State::kRecorded:
      return "recorded";
  }
  return "?";
}

bool CloseMachine::matches(const v1::HistoryEvent& e) const {
  return state_ == State::kCommandCreated && e.attributes_case() == recorded_as(command_);
}

std::optional<NonDeterminism> CloseMachine::apply(const v1::HistoryEvent& e, FutureResolver&) {
  const std::optional<State> to =
      e.attributes_case() == recorded_as(command_) ? next_state(kTable, state_, Input::kClosed) : std::nullopt;
  if (!to) return nondeterminism::refused(e, "the run's close", name(state_));
  state_ = *to;
  return std::nullopt;
}

}  // namespace reprise::worker
