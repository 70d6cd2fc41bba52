// Signals and cancel requests a workflow sends to other workflows.
//
// The command writes the initiated event and a transfer task in one commit.
// Carrying the task out takes two transitions (engine/transfer.cpp): one of
// the target (signal or request cancel, under a request id fixed by the
// sender's run and initiated event, so a delivery retried after a crash is
// recorded once), then one of the sender that records the outcome
// (ExternalWorkflowExecutionSignaled / ...CancelRequested, or ...Failed with
// NOT_FOUND when the target does not exist or is closed) and removes the
// task. A sender that closed first drops the task: nothing is delivered on
// behalf of a closed run.
#include "engine/execution/mutable_state.hpp"

namespace reprise::engine {

Status MutableState::check_external_target(const v1::WorkflowExecution& target, const std::string& where) const {
  if (target.workflow_id().empty()) return Status::invalid_argument(where + ": execution.workflow_id is required");
  if (target.workflow_id().size() > config_.max_id_length || target.run_id().size() > config_.max_id_length) {
    return Status::invalid_argument(where + ": execution is longer than " + std::to_string(config_.max_id_length) +
                                    " bytes");
  }
  if (state_.external_requests_size() >= config_.max_pending_external_requests) {
    return Status::resource_exhausted(where + ": the workflow already has " +
                                      std::to_string(config_.max_pending_external_requests) +
                                      " signals and cancel requests to other workflows in flight");
  }
  return Status::ok();
}

Status MutableState::initiate_signal_external(const v1::SignalExternalWorkflowExecutionCommandAttributes& a,
                                              int64_t completed_event_id, const std::string& where) {
  REPRISE_RETURN_IF_ERROR(check_external_target(a.execution(), where));
  if (a.signal_name().empty()) return Status::invalid_argument(where + ": signal_name is required");
  if (a.signal_name().size() > config_.max_id_length) {
    return Status::invalid_argument(where + ": signal_name is longer than " + std::to_string(config_.max_id_length) +
                                    " bytes");
  }
  v1::HistoryEvent e;
  auto* i = e.mutable_signal_external_workflow_execution_initiated();
  *i->mutable_workflow_execution() = a.execution();
  i->set_signal_name(a.signal_name());
  *i->mutable_input() = a.input();
  i->set_child_workflow_only(a.child_workflow_only());
  i->set_workflow_task_completed_event_id(completed_event_id);
  const int64_t initiated_event_id = append(std::move(e)).event_id();

  internal::ExternalRequestInfo& info = (*state_.mutable_external_requests())[initiated_event_id];
  *info.mutable_target() = a.execution();
  internal::TransferTask task;
  task.set_kind(internal::TransferTask::KIND_SIGNAL_EXTERNAL);
  task.set_initiated_event_id(initiated_event_id);
  add_transfer(key_, task);
  return Status::ok();
}

Status MutableState::initiate_cancel_external(const v1::RequestCancelExternalWorkflowExecutionCommandAttributes& a,
                                              int64_t completed_event_id, const std::string& where) {
  REPRISE_RETURN_IF_ERROR(check_external_target(a.execution(), where));
  v1::HistoryEvent e;
  auto* i = e.mutable_request_cancel_external_workflow_execution_initiated();
  *i->mutable_workflow_execution() = a.execution();
  i->set_child_workflow_only(a.child_workflow_only());
  i->set_reason(a.reason());
  i->set_workflow_task_completed_event_id(completed_event_id);
  const int64_t initiated_event_id = append(std::move(e)).event_id();

  internal::ExternalRequestInfo& info = (*state_.mutable_external_requests())[initiated_event_id];
  *info.mutable_target() = a.execution();
  info.set_cancel(true);
  internal::TransferTask task;
  task.set_kind(internal::TransferTask::KIND_CANCEL_EXTERNAL);
  task.set_initiated_event_id(initiated_event_id);
  add_transfer(key_, task);
  return Status::ok();
}

std::string MutableState::external_request_id(int64_t initiated_event_id) const {
  return "external/" + key_.workflow_id + "/" + key_.run_id + "/" + std::to_string(initiated_event_id);
}

bool MutableState::external_request_pending(int64_t initiated_event_id) const {
  return !closed() && state_.external_requests().contains(initiated_event_id);
}

Result<Applied> MutableState::record_external_outcome(int64_t initiated_event_id, v1::ExternalFailureCause failure) {
  const bool delivered = failure == v1::EXTERNAL_FAILURE_CAUSE_UNSPECIFIED;
  if (!external_request_pending(initiated_event_id)) return stale();
  const internal::ExternalRequestInfo info = state_.external_requests().at(initiated_event_id);
  state_.mutable_external_requests()->erase(initiated_event_id);
  v1::HistoryEvent e;
  if (info.cancel() && delivered) {
    auto* a = e.mutable_external_workflow_execution_cancel_requested();
    *a->mutable_workflow_execution() = info.target();
    a->set_initiated_event_id(initiated_event_id);
  } else if (info.cancel()) {
    auto* a = e.mutable_request_cancel_external_workflow_execution_failed();
    *a->mutable_workflow_execution() = info.target();
    a->set_cause(failure);
    a->set_initiated_event_id(initiated_event_id);
  } else if (delivered) {
    auto* a = e.mutable_external_workflow_execution_signaled();
    *a->mutable_workflow_execution() = info.target();
    a->set_initiated_event_id(initiated_event_id);
  } else {
    auto* a = e.mutable_signal_external_workflow_execution_failed();
    *a->mutable_workflow_execution() = info.target();
    a->set_cause(failure);
    a->set_initiated_event_id(initiated_event_id);
  }
  deliver(std::move(e));
  return Applied::kYes;
}

}  // namespace reprise::engine
