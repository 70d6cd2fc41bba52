// Delivery of a signal or cancel request that a workflow sent to another
// (engine/execution/external_requests.cpp has the sender's side): first the
// target's transition, under a request id fixed by the sender's run and
// initiated event so a retried delivery counts once (on the node that serves
// the target's shard, remote_transfer.cpp, when that is another); then the
// sender's, which records the outcome and removes the transfer task.
#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "history/stored_proto.hpp"

namespace reprise::engine {

void Engine::deliver_external(TaskRecord task, const internal::TransferTask& transfer, int attempt) {
  const int64_t initiated = transfer.initiated_event_id();
  auto retry = [this, task, attempt](const Status& why) { retry_transfer(task, attempt, why); };
  // The sender: still waiting for this request's outcome?
  Result<ExecutionRecord> record = store_.get_execution(task.execution);
  if (!record)
    return record.status().code() == StatusCode::kNotFound ? drop_task(task.task_id) : retry(record.status());
  Result<MutableState> sender = MutableState::load(*record, clock_.now(), options_.config);
  if (!sender) return retry(sender.status());
  if (!sender->external_request_pending(initiated)) return drop_task(task.task_id);
  const std::string request_id = sender->external_request_id(initiated);

  v1::History initiated_event;
  int64_t next = 0;
  if (Status s = fill_history(task.execution, initiated, 1, initiated_event, next, initiated); !s) return retry(s);
  if (initiated_event.events_size() != 1) return drop_task(task.task_id);  // the sender's history is gone
  const v1::HistoryEvent& e = initiated_event.events(0);
  const bool cancel = transfer.kind() == internal::TransferTask::KIND_CANCEL_EXTERNAL;
  if (cancel != e.has_request_cancel_external_workflow_execution_initiated() ||
      (!cancel && !e.has_signal_external_workflow_execution_initiated())) {
    log::error("dropping an external request whose initiated event is of another kind",
               {{"task_id", std::to_string(task.task_id)}, {"execution", task.execution.to_string()}});
    return drop_task(task.task_id);
  }
  const v1::WorkflowExecution& target =
      cancel ? e.request_cancel_external_workflow_execution_initiated().workflow_execution()
             : e.signal_external_workflow_execution_initiated().workflow_execution();
  auto record_outcome = [this, task, initiated, attempt](Result<v1::ExternalFailureCause> delivered) {
    if (!delivered) return retry_transfer(task, attempt, delivered.status());
    const int64_t task_id = task.task_id;
    transition(
        task.execution,
        [initiated, outcome = *delivered](MutableState& ms) { return ms.record_external_outcome(initiated, outcome); },
        [task_id](Transition& t) { t.remove_tasks.push_back(task_id); },
        [this, task, attempt](Result<Applied> recorded) {
          if (!recorded && recorded.status().code() != StatusCode::kNotFound) {
            retry_transfer(task, attempt, recorded.status());
          }
        });
  };
  if (remote_target({task.execution.namespace_id, target.workflow_id(), ""})) {
    internal::RemoteTransfer request = remote_request(task, transfer);
    *request.mutable_event() = e;
    request.set_request_id(request_id);
    return send_transfer(task, attempt, {task.execution.namespace_id, target.workflow_id(), ""}, request,
                         [record_outcome](const internal::RemoteTransferOutcome& out) { record_outcome(out.cause()); });
  }
  deliver_external_here(task.execution, e, request_id, std::move(record_outcome));
}

void Engine::deliver_external_here(const ExecutionKey& sender, const v1::HistoryEvent& e, const std::string& request_id,
                                   std::function<void(Result<v1::ExternalFailureCause>)> then) {
  const bool cancel = e.has_request_cancel_external_workflow_execution_initiated();
  const v1::WorkflowExecution target =
      cancel ? e.request_cancel_external_workflow_execution_initiated().workflow_execution()
             : e.signal_external_workflow_execution_initiated().workflow_execution();
  const bool child_only = cancel ? e.request_cancel_external_workflow_execution_initiated().child_workflow_only()
                                 : e.signal_external_workflow_execution_initiated().child_workflow_only();

  // The target's transition: what it refused the request for, if it did
  // (a closed target answers FAILED_PRECONDITION, so a target named by id
  // alone is followed across continue-as-new).
  auto deliver = [e, cancel, child_only, request_id, sender](MutableState& ms) -> Result<v1::ExternalFailureCause> {
    const auto& parent = ms.state().parent_execution();
    if (!ms.closed() && child_only &&
        (parent.workflow_id() != sender.workflow_id || parent.run_id() != sender.run_id)) {
      ms.change_nothing();
      return v1::EXTERNAL_FAILURE_CAUSE_NOT_CHILD;
    }
    if (cancel) {
      REPRISE_RETURN_IF_ERROR(
          ms.request_cancel(e.request_cancel_external_workflow_execution_initiated().reason(), sender.workflow_id));
      return v1::EXTERNAL_FAILURE_CAUSE_UNSPECIFIED;
    }
    ms.expect_claim_checks();  // the input may be a reference from the sender's history
    const auto& signal = e.signal_external_workflow_execution_initiated();
    REPRISE_RETURN_IF_ERROR(ms.signal(signal.signal_name(), signal.input(), sender.workflow_id, request_id));
    return v1::EXTERNAL_FAILURE_CAUSE_UNSPECIFIED;
  };
  auto outcome = [then = std::move(then)](Result<v1::ExternalFailureCause> delivered) {
    if (!delivered && (delivered.status().code() == StatusCode::kNotFound ||
                       delivered.status().code() == StatusCode::kFailedPrecondition)) {
      return then(v1::EXTERNAL_FAILURE_CAUSE_NOT_FOUND);  // no such workflow, or it is closed
    }
    then(std::move(delivered));
  };
  transition_named(sender.namespace_id, target, std::move(deliver), std::move(outcome), Unreadable::kFail,
                   Origin::kInternal);
}

}  // namespace reprise::engine
