// Continue-as-new: the workflow closes this run and starts a fresh one with
// the same workflow id, new input and an empty history, in one transition.
// Retries (workflow_retry.cpp) start their next run the same way; the
// lineage both share (next_run_request, start_next_run) lives here.
#include "engine/execution/mutable_state.hpp"
#include "reprise/detail/proto_time.hpp"

namespace reprise::engine {

Status MutableState::continue_as_new(const v1::ContinueAsNewWorkflowExecutionCommandAttributes& a,
                                     int64_t completed_event_id, const std::string& where) {
  for (const auto* d : {&a.workflow_run_timeout(), &a.workflow_task_timeout()}) {
    if (to_nanos(*d).count() < 0) return Status::invalid_argument(where + ": timeouts must not be negative");
  }
  // Unset fields carry over from this run, the retry policy too (as in
  // Temporal): a chain that continues as new is still retried.
  v1::StartWorkflowRequest next = next_run_request();
  if (!a.workflow_type().name().empty()) *next.mutable_workflow_type() = a.workflow_type();
  if (!a.task_queue().name().empty()) next.mutable_task_queue()->set_name(a.task_queue().name());
  *next.mutable_input() = a.input();
  if (to_nanos(a.workflow_run_timeout()).count() > 0) *next.mutable_workflow_run_timeout() = a.workflow_run_timeout();
  if (to_nanos(a.workflow_task_timeout()).count() > 0) {
    *next.mutable_workflow_task_timeout() = a.workflow_task_timeout();
  }
  if (a.has_retry_policy()) *next.mutable_retry_policy() = a.retry_policy();

  RunLineage lineage;
  lineage.initiator = v1::CONTINUE_AS_NEW_INITIATOR_WORKFLOW;  // attempt 1: a new chain of retries
  REPRISE_RETURN_IF_ERROR(start_next_run(next, std::move(lineage)).with_context(where));

  v1::HistoryEvent e;
  auto* c = e.mutable_workflow_execution_continued_as_new();
  c->set_new_execution_run_id(continued_as_->key().run_id);
  *c->mutable_workflow_type() = next.workflow_type();
  *c->mutable_task_queue() = next.task_queue();
  *c->mutable_input() = a.input();
  *c->mutable_workflow_run_timeout() = next.workflow_run_timeout();
  *c->mutable_workflow_task_timeout() = next.workflow_task_timeout();
  c->set_workflow_task_completed_event_id(completed_event_id);
  append(std::move(e));
  close(v1::WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW);
  return Status::ok();
}

v1::StartWorkflowRequest MutableState::next_run_request() const {
  v1::StartWorkflowRequest next;
  next.set_namespace_(key_.namespace_id);
  next.set_workflow_id(key_.workflow_id);
  *next.mutable_workflow_type() = state_.workflow_type();
  next.mutable_task_queue()->set_name(state_.task_queue().name());
  *next.mutable_workflow_execution_timeout() = state_.workflow_execution_timeout();
  *next.mutable_workflow_run_timeout() = state_.workflow_run_timeout();
  *next.mutable_workflow_task_timeout() = state_.workflow_task_timeout();
  if (state_.has_retry_policy()) *next.mutable_retry_policy() = state_.retry_policy();
  // The chain's start request id: a client's StartWorkflow retried after
  // the run it started continued as new (or was retried) finds the chain's
  // current run by it and is answered as the same start, not ALREADY_EXISTS
  // (issue 20, found by the simulator).
  next.set_request_id(state_.start_request_id());
  return next;
}

Status MutableState::start_next_run(const v1::StartWorkflowRequest& next, RunLineage lineage) {
  if (!run_ids_) return Status::internal("no run id source to start the run after " + key_.to_string());
  lineage.continued_run_id = key_.run_id;
  lineage.first_run_id = state_.first_run_id();
  if (state_.has_execution_expiration_time()) {
    lineage.execution_expiration = to_time(state_.execution_expiration_time());
  }
  lineage.parent = state_.parent_execution();
  lineage.parent_initiated_event_id = state_.parent_initiated_event_id();
  auto continued =
      std::make_unique<MutableState>(ExecutionKey{key_.namespace_id, key_.workflow_id, run_ids_()}, now_, config_);
  // Its input may hold references (this run's own, or a retry's from its
  // first run's history): the new run records its own.
  continued->expect_claim_checks();
  REPRISE_RETURN_IF_ERROR(continued->start(next, lineage));
  state_.set_next_run_id(continued->key().run_id);
  continued_as_ = std::move(continued);
  return Status::ok();
}

}  // namespace reprise::engine
