// Continue-as-new: the workflow closes this run and starts a fresh one with
// the same workflow id, new input and an empty history, in one transition.
#include "engine/execution/mutable_state.hpp"
#include "history/proto_time.hpp"

namespace reprise::engine {

Status MutableState::continue_as_new(const v1::ContinueAsNewWorkflowExecutionCommandAttributes& a,
                                     int64_t completed_event_id, const std::string& where) {
  if (!run_ids_) return Status::internal(where + ": no run id source for continue-as-new");
  for (const auto* d : {&a.workflow_run_timeout(), &a.workflow_task_timeout()}) {
    if (to_nanos(*d).count() < 0) return Status::invalid_argument(where + ": timeouts must not be negative");
  }
  // Unset fields carry over from this run.
  v1::StartWorkflowRequest next;
  next.set_namespace_(key_.namespace_id);
  next.set_workflow_id(key_.workflow_id);
  *next.mutable_workflow_type() = a.workflow_type().name().empty() ? state_.workflow_type() : a.workflow_type();
  next.mutable_task_queue()->set_name(a.task_queue().name().empty() ? state_.task_queue().name()
                                                                    : a.task_queue().name());
  *next.mutable_input() = a.input();
  *next.mutable_workflow_run_timeout() =
      to_nanos(a.workflow_run_timeout()).count() > 0 ? a.workflow_run_timeout() : state_.workflow_run_timeout();
  *next.mutable_workflow_task_timeout() =
      to_nanos(a.workflow_task_timeout()).count() > 0 ? a.workflow_task_timeout() : state_.workflow_task_timeout();
  *next.mutable_workflow_execution_timeout() = state_.workflow_execution_timeout();
  *next.mutable_retry_policy() = a.retry_policy();
  // No request id: the start's belongs to the first run, and a retry of
  // that start must not find this one (Temporal gives a new run a new id).

  RunLineage lineage;
  lineage.continued_run_id = key_.run_id;
  lineage.original_run_id = state_.original_run_id();
  if (state_.has_execution_expiration_time())
    lineage.execution_expiration = to_time(state_.execution_expiration_time());
  lineage.parent = state_.parent_execution();
  lineage.parent_initiated_event_id = state_.parent_initiated_event_id();

  const ExecutionKey next_key{key_.namespace_id, key_.workflow_id, run_ids_()};
  auto continued = std::make_unique<MutableState>(next_key, now_, config_);
  if (claim_checks_) continued->expect_claim_checks();
  REPRISE_RETURN_IF_ERROR(continued->start(next, lineage).with_context(where));

  v1::HistoryEvent e;
  auto* c = e.mutable_workflow_execution_continued_as_new();
  c->set_new_execution_run_id(next_key.run_id);
  *c->mutable_workflow_type() = next.workflow_type();
  *c->mutable_task_queue() = next.task_queue();
  *c->mutable_input() = a.input();
  *c->mutable_workflow_run_timeout() = next.workflow_run_timeout();
  *c->mutable_workflow_task_timeout() = next.workflow_task_timeout();
  c->set_workflow_task_completed_event_id(completed_event_id);
  append(std::move(e));
  close(v1::WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW);
  continued_as_ = std::move(continued);
  return Status::ok();
}

}  // namespace reprise::engine
