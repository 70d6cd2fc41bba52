#include "worker/machines/child_machine.hpp"

#include "worker/machines/nondeterminism.hpp"

namespace reprise::worker {

namespace {

std::optional<ChildMachine::Input> child_input_of(const v1::HistoryEvent& e) {
  switch (e.attributes_case()) {
    case v1::HistoryEvent::kStartChildWorkflowExecutionInitiated:
      return ChildMachine::Input::kInitiated;
    case v1::HistoryEvent::kChildWorkflowExecutionStarted:
      return ChildMachine::Input::kStarted;
    case v1::HistoryEvent::kStartChildWorkflowExecutionFailed:
      return ChildMachine::Input::kStartFailed;
    case v1::HistoryEvent::kChildWorkflowExecutionCompleted:
    case v1::HistoryEvent::kChildWorkflowExecutionFailed:
    case v1::HistoryEvent::kChildWorkflowExecutionCanceled:
    case v1::HistoryEvent::kChildWorkflowExecutionTimedOut:
    case v1::HistoryEvent::kChildWorkflowExecutionTerminated:
      return ChildMachine::Input::kClosed;
    default:
      return std::nullopt;
  }
}

// How the child ended, as the failure its future carries (kind CHILD_WORKFLOW).
v1::Failure failure_of(const v1::HistoryEvent& e) {
  v1::Failure failure;
  failure.set_kind(v1::FAILURE_KIND_CHILD_WORKFLOW);
  if (e.has_start_child_workflow_execution_failed()) {
    switch (e.start_child_workflow_execution_failed().cause()) {
      case v1::EXTERNAL_FAILURE_CAUSE_ALREADY_EXISTS:
        failure.set_message("could not start: a workflow with its id is already running");
        break;
      case v1::EXTERNAL_FAILURE_CAUSE_REFUSED:
        failure.set_message("could not start: the server refused its attributes");
        break;
      default:
        failure.set_message("could not start");
        break;
    }
  } else if (e.has_child_workflow_execution_failed()) {
    const v1::Failure& cause = e.child_workflow_execution_failed().failure();
    failure.set_message("failed: " + cause.message());
    *failure.mutable_cause() = cause;
  } else if (e.has_child_workflow_execution_canceled()) {
    failure.set_message("was canceled");
  } else if (e.has_child_workflow_execution_timed_out()) {
    failure.set_message("timed out");
  } else {
    failure.set_message("was terminated");
  }
  return failure;
}

}  // namespace

ChildMachine::ChildMachine(v1::Command command, std::shared_ptr<detail::Pending> pending, bool derived_id)
    : FutureMachine(std::move(command), std::move(pending)), derived_id_(derived_id) {}

const char* ChildMachine::name(State s) {
  switch (s) {
    case State::kStartCommandCreated:
      return "start command created";
    case State::kInitiated:
      return "initiated";
    case State::kStarted:
      return "started";
    case State::kStartFailed:
      return "start failed";
    case State::kClosed:
      return "closed";
    case State::kWaitCanceled:
      return "wait canceled";
    case State::kWaitCanceledClosed:
      return "closed after its wait was canceled";
    case State::kWithdrawn:
      return "withdrawn";
  }
  return "?";
}

bool ChildMachine::matches(const v1::HistoryEvent& e) const {
  if (state_ != State::kStartCommandCreated || !e.has_start_child_workflow_execution_initiated()) return false;
  const auto& issued = command_.start_child_workflow_execution();
  const auto& recorded = e.start_child_workflow_execution_initiated();
  if (issued.workflow_type().name() != recorded.workflow_type().name()) return false;
  return derived_id_ || issued.workflow_id() == recorded.workflow_id();
}

std::optional<NonDeterminism> ChildMachine::apply(const v1::HistoryEvent& e, FutureResolver& futures) {
  const std::optional<Input> input = child_input_of(e);
  const std::optional<State> to = input ? next_state(kTable, state_, *input) : std::nullopt;
  if (!to) {
    return nondeterminism::refused(e, "child workflow " + command_.start_child_workflow_execution().workflow_id(),
                                   name(state_));
  }
  state_ = *to;
  if (*input == Input::kInitiated) pending_->event_id = e.event_id();
  if (state_ != State::kStartFailed && state_ != State::kClosed) return std::nullopt;
  if (e.has_child_workflow_execution_completed()) {
    pending_->result = e.child_workflow_execution_completed().result();
  } else {
    pending_->failure = failure_of(e);
  }
  futures.resolve(pending_);
  return std::nullopt;
}

bool ChildMachine::awaits_outcome() const {
  return state_ == State::kInitiated || state_ == State::kStarted || state_ == State::kWaitCanceled;
}

CancelEffect ChildMachine::cancel(FutureResolver& futures) {
  const std::optional<State> to = next_state(kTable, state_, Input::kCancel);
  if (!to) return CancelEffect::kNone;
  state_ = *to;
  resolve_canceled(futures);
  // Only the wait ends: the child's parent-close policy covers the child.
  return state_ == State::kWithdrawn ? CancelEffect::kWithdrawCommand : CancelEffect::kNone;
}

}  // namespace reprise::worker
