#include "worker/machines/external_machine.hpp"

#include "history/enum_name.hpp"
#include "worker/machines/nondeterminism.hpp"

namespace reprise::worker {

namespace {

bool same_target(const v1::WorkflowExecution& a, const v1::WorkflowExecution& b) {
  return a.workflow_id() == b.workflow_id() && a.run_id() == b.run_id();
}

// Why the request was not delivered, as the failure its future carries.
v1::Failure failure_of(const std::string& request, v1::ExternalFailureCause cause) {
  v1::Failure failure;
  failure.set_type(enum_name(cause));
  std::string why;
  switch (cause) {
    case v1::EXTERNAL_FAILURE_CAUSE_NOT_FOUND:
      why = "no such workflow, or it is closed";
      break;
    case v1::EXTERNAL_FAILURE_CAUSE_NOT_CHILD:
      why = "it is not a child of this workflow";
      break;
    default:
      why = "the server did not deliver it";
      break;
  }
  failure.set_message(request + " failed: " + failure.type() + " (" + why + ")");
  return failure;
}

}  // namespace

ExternalMachine::ExternalMachine(v1::Command command, std::shared_ptr<detail::Pending> pending)
    : FutureMachine(std::move(command), std::move(pending)) {}

const char* ExternalMachine::name(State s) {
  switch (s) {
    case State::kCommandCreated:
      return "command created";
    case State::kInitiated:
      return "initiated";
    case State::kDelivered:
      return "delivered";
    case State::kFailed:
      return "failed";
    case State::kWithdrawn:
      return "withdrawn";
  }
  return "?";
}

std::optional<ExternalMachine::Input> ExternalMachine::input_of(const v1::HistoryEvent& e) const {
  if (command_.has_signal_external_workflow_execution()) {
    if (e.has_signal_external_workflow_execution_initiated()) return Input::kInitiated;
    if (e.has_external_workflow_execution_signaled()) return Input::kDelivered;
    if (e.has_signal_external_workflow_execution_failed()) return Input::kFailed;
  } else {
    if (e.has_request_cancel_external_workflow_execution_initiated()) return Input::kInitiated;
    if (e.has_external_workflow_execution_cancel_requested()) return Input::kDelivered;
    if (e.has_request_cancel_external_workflow_execution_failed()) return Input::kFailed;
  }
  return std::nullopt;
}

bool ExternalMachine::matches(const v1::HistoryEvent& e) const {
  if (state_ != State::kCommandCreated) return false;
  // The target (and, for a signal, its name) make the request; the value
  // sent does not, as for activities.
  if (command_.has_signal_external_workflow_execution()) {
    if (!e.has_signal_external_workflow_execution_initiated()) return false;
    const auto& issued = command_.signal_external_workflow_execution();
    const auto& recorded = e.signal_external_workflow_execution_initiated();
    return same_target(issued.execution(), recorded.workflow_execution()) &&
           issued.signal_name() == recorded.signal_name() &&
           issued.child_workflow_only() == recorded.child_workflow_only();
  }
  if (!e.has_request_cancel_external_workflow_execution_initiated()) return false;
  const auto& issued = command_.request_cancel_external_workflow_execution();
  const auto& recorded = e.request_cancel_external_workflow_execution_initiated();
  return same_target(issued.execution(), recorded.workflow_execution()) &&
         issued.child_workflow_only() == recorded.child_workflow_only();
}

std::optional<NonDeterminism> ExternalMachine::apply(const v1::HistoryEvent& e, FutureResolver& futures) {
  const std::optional<Input> input = input_of(e);
  const std::optional<State> to = input ? next_state(kTable, state_, *input) : std::nullopt;
  if (!to) return nondeterminism::refused(e, pending_->name, name(state_));
  state_ = *to;
  switch (*input) {
    case Input::kInitiated:
      pending_->event_id = e.event_id();
      break;
    case Input::kDelivered:
      futures.resolve(pending_);
      break;
    case Input::kFailed:
      pending_->failure =
          failure_of(pending_->name, e.has_signal_external_workflow_execution_failed()
                                         ? e.signal_external_workflow_execution_failed().cause()
                                         : e.request_cancel_external_workflow_execution_failed().cause());
      futures.resolve(pending_);
      break;
    case Input::kCancel:
      break;
  }
  return std::nullopt;
}

CancelEffect ExternalMachine::cancel(FutureResolver& futures) {
  const std::optional<State> to = next_state(kTable, state_, Input::kCancel);
  if (!to) return CancelEffect::kNone;  // recorded: it is delivered, and the future says how
  state_ = *to;
  resolve_canceled(futures);
  return CancelEffect::kWithdrawCommand;
}

}  // namespace reprise::worker
