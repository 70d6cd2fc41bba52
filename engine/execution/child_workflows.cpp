// Child workflows, on the parent's and on the child's side.
//
// A parent's StartChildWorkflowExecution command writes the initiated event
// and a START_CHILD transfer task in the same commit; the engine carries the
// task out later as one transition of the parent that also creates the child
// (or records why it could not). A child's close leaves a CHILD_CLOSED task
// for its parent; a parent's close leaves a PARENT_CLOSE_POLICY task per open
// child. Every step re-checks the state it applies to, so a task that ran
// twice, or after its target closed, changes nothing.
#include <algorithm>
#include <vector>

#include "engine/execution/mutable_state.hpp"
#include "engine/execution/workflow_id_reuse.hpp"
#include "reprise/detail/proto_time.hpp"

namespace reprise::engine {

namespace {

v1::WorkflowExecution execution_of(const std::string& workflow_id, const std::string& run_id) {
  v1::WorkflowExecution e;
  e.set_workflow_id(workflow_id);
  e.set_run_id(run_id);
  return e;
}

}  // namespace

void MutableState::add_transfer(const ExecutionKey& target, const internal::TransferTask& task) {
  tasks_.push_back({0, TaskKind::kTransfer, "", target, task.SerializeAsString()});
}

Status MutableState::initiate_child(const v1::StartChildWorkflowExecutionCommandAttributes& a,
                                    int64_t completed_event_id, const std::string& where) {
  if (a.workflow_id().empty()) return Status::invalid_argument(where + ": workflow_id is required");
  if (a.workflow_id().size() > config_.max_id_length) {
    return Status::invalid_argument(where + ": workflow_id is longer than " + std::to_string(config_.max_id_length));
  }
  REPRISE_RETURN_IF_ERROR(check_new_run(a.workflow_type(), a.task_queue().name(), a.workflow_execution_timeout(),
                                        a.workflow_run_timeout(), a.workflow_task_timeout(), a.retry_policy(), where));
  for (const auto& [id, child] : state_.children()) {
    if (child.workflow_id() == a.workflow_id()) {
      return Status::invalid_argument(where + ": workflow id '" + a.workflow_id() +
                                      "' is already used by a pending child of this workflow");
    }
  }
  if (state_.children_size() >= config_.max_pending_children) {
    return Status::resource_exhausted(where + ": the workflow already has " +
                                      std::to_string(config_.max_pending_children) + " pending child workflows");
  }
  v1::HistoryEvent e;
  auto* i = e.mutable_start_child_workflow_execution_initiated();
  i->set_workflow_id(a.workflow_id());
  *i->mutable_workflow_type() = a.workflow_type();
  i->mutable_task_queue()->set_name(a.task_queue().name().empty() ? state_.task_queue().name() : a.task_queue().name());
  *i->mutable_input() = a.input();
  *i->mutable_workflow_execution_timeout() = a.workflow_execution_timeout();
  *i->mutable_workflow_run_timeout() = a.workflow_run_timeout();
  *i->mutable_workflow_task_timeout() = a.workflow_task_timeout();
  i->set_parent_close_policy(a.parent_close_policy() == v1::PARENT_CLOSE_POLICY_UNSPECIFIED
                                 ? v1::PARENT_CLOSE_POLICY_TERMINATE
                                 : a.parent_close_policy());
  i->set_workflow_id_reuse_policy(a.workflow_id_reuse_policy());
  if (a.has_retry_policy()) *i->mutable_retry_policy() = a.retry_policy();
  i->set_workflow_task_completed_event_id(completed_event_id);
  const v1::HistoryEvent& written = append(std::move(e));
  const int64_t initiated_event_id = written.event_id();

  internal::ChildInfo& child = (*state_.mutable_children())[initiated_event_id];
  child.set_workflow_id(a.workflow_id());
  *child.mutable_workflow_type() = a.workflow_type();
  child.set_parent_close_policy(written.start_child_workflow_execution_initiated().parent_close_policy());

  internal::TransferTask start;
  start.set_kind(internal::TransferTask::KIND_START_CHILD);
  start.set_initiated_event_id(initiated_event_id);
  add_transfer(key_, start);
  return Status::ok();
}

v1::StartWorkflowRequest MutableState::child_start_request(
    const ExecutionKey& parent, const v1::StartChildWorkflowExecutionInitiatedEventAttributes& a) {
  v1::StartWorkflowRequest request;
  request.set_namespace_(parent.namespace_id);
  request.set_workflow_id(a.workflow_id());
  *request.mutable_workflow_type() = a.workflow_type();
  *request.mutable_task_queue() = a.task_queue();
  *request.mutable_input() = a.input();
  *request.mutable_workflow_execution_timeout() = a.workflow_execution_timeout();
  *request.mutable_workflow_run_timeout() = a.workflow_run_timeout();
  *request.mutable_workflow_task_timeout() = a.workflow_task_timeout();
  if (a.has_retry_policy()) *request.mutable_retry_policy() = a.retry_policy();
  request.set_identity(parent.workflow_id);
  return request;
}

std::string MutableState::child_start_request_id(const ExecutionKey& parent, int64_t initiated_event_id) {
  return "child:" + parent.run_id + ":" + std::to_string(initiated_event_id);
}

RunLineage MutableState::child_lineage(const ExecutionKey& parent, int64_t initiated_event_id) {
  RunLineage lineage;
  lineage.parent = execution_of(parent.workflow_id, parent.run_id);
  lineage.parent_initiated_event_id = initiated_event_id;
  return lineage;
}

Result<Applied> MutableState::start_child(int64_t initiated_event_id,
                                          const v1::StartChildWorkflowExecutionInitiatedEventAttributes& a,
                                          const std::optional<CurrentRun>& existing, const std::string& child_run_id) {
  // The parent closed first (the child never starts), or the start is recorded.
  if (!child_start_pending(initiated_event_id)) return stale();

  auto fail_start = [&](v1::ExternalFailureCause cause) {
    return record_child_start_failed(initiated_event_id, a, cause);
  };
  if (existing && existing->start_request_id == child_start_request_id(key_, initiated_event_id)) {
    // Started by another node for this very command (docs/cluster.md),
    // whose shard came here before the start was recorded: that run it is.
    return record_child_started(initiated_event_id, a, existing->run_id);
  }
  if (existing && (existing->status == v1::WORKFLOW_EXECUTION_STATUS_RUNNING ||
                   !workflow_id_reusable(a.workflow_id_reuse_policy(), existing->status))) {
    return fail_start(v1::EXTERNAL_FAILURE_CAUSE_ALREADY_EXISTS);
  }

  auto started =
      std::make_unique<MutableState>(ExecutionKey{key_.namespace_id, a.workflow_id(), child_run_id}, now_, config_);
  started->expect_claim_checks();  // the input may be a reference from the parent's history
  if (Status s = started->start(child_start_request(key_, a), child_lineage(key_, initiated_event_id)); !s) {
    // Attributes recorded before the command was checked as it is now (or
    // under other limits): a permanent refusal, not a retry every 200 ms.
    if (s.code() != StatusCode::kInvalidArgument) return s.with_context("starting child workflow");
    return fail_start(v1::EXTERNAL_FAILURE_CAUSE_REFUSED);
  }
  started_child_ = std::move(started);
  started_child_replaces_ = existing ? existing->run_id : "";
  return record_child_started(initiated_event_id, a, child_run_id);
}

bool MutableState::child_start_pending(int64_t initiated_event_id) const {
  if (closed()) return false;
  auto it = state_.children().find(initiated_event_id);
  return it != state_.children().end() && it->second.run_id().empty();
}

Result<Applied> MutableState::record_child_started(int64_t initiated_event_id,
                                                   const v1::StartChildWorkflowExecutionInitiatedEventAttributes& a,
                                                   const std::string& child_run_id) {
  if (closed() && a.parent_close_policy() != v1::PARENT_CLOSE_POLICY_ABANDON) {
    // This run closed while another node started the child, so its close
    // left no policy for it: the child gets it now, rather than outliving a
    // parent whose policy says it must not.
    internal::TransferTask policy;
    policy.set_kind(internal::TransferTask::KIND_PARENT_CLOSE_POLICY);
    *policy.mutable_parent() = execution_of(key_.workflow_id, key_.run_id);
    policy.set_policy(a.parent_close_policy());
    *policy.mutable_child() = execution_of(a.workflow_id(), "");
    add_transfer(key_, policy);
    return Applied::kYes;
  }
  if (!child_start_pending(initiated_event_id)) return stale();
  internal::ChildInfo& child = state_.mutable_children()->at(initiated_event_id);
  child.set_run_id(child_run_id);
  v1::HistoryEvent e;
  auto* s = e.mutable_child_workflow_execution_started();
  *s->mutable_workflow_execution() = execution_of(a.workflow_id(), child_run_id);
  *s->mutable_workflow_type() = a.workflow_type();
  s->set_initiated_event_id(initiated_event_id);
  const v1::HistoryEvent& written = deliver(std::move(e));
  child.set_started_event_id(written.event_id());  // 0 while buffered; set when written
  return Applied::kYes;
}

Result<Applied> MutableState::record_child_start_failed(
    int64_t initiated_event_id, const v1::StartChildWorkflowExecutionInitiatedEventAttributes& a,
    v1::ExternalFailureCause cause) {
  if (!child_start_pending(initiated_event_id)) return stale();
  // The parent's command resolves as failed: the child cannot start, now or
  // on any retry.
  v1::HistoryEvent e;
  auto* f = e.mutable_start_child_workflow_execution_failed();
  f->set_workflow_id(a.workflow_id());
  *f->mutable_workflow_type() = a.workflow_type();
  f->set_cause(cause);
  f->set_initiated_event_id(initiated_event_id);
  f->set_workflow_task_completed_event_id(a.workflow_task_completed_event_id());
  state_.mutable_children()->erase(initiated_event_id);
  deliver(std::move(e));
  return Applied::kYes;
}

Result<Applied> MutableState::record_child_closed(int64_t initiated_event_id, const v1::WorkflowExecution& execution,
                                                  const v1::HistoryEvent& close_event) {
  if (closed()) return stale();
  auto it = state_.mutable_children()->find(initiated_event_id);
  if (it == state_.mutable_children()->end()) return stale();
  const internal::ChildInfo child = it->second;
  if (child.workflow_id() != execution.workflow_id()) return stale();
  if (child.run_id().empty()) {
    // Started by another node, which has not recorded the start here yet
    // (docs/cluster.md): the close waits for it rather than being lost.
    return Status::unavailable("child " + execution.workflow_id() + "/" + execution.run_id() +
                               " closed before its parent recorded its start; retried");
  }

  v1::HistoryEvent e;
  auto fill = [&](auto* a) {
    *a->mutable_workflow_execution() = execution;
    *a->mutable_workflow_type() = child.workflow_type();
    a->set_initiated_event_id(initiated_event_id);
    a->set_started_event_id(child.started_event_id());
  };
  switch (close_event.attributes_case()) {
    case v1::HistoryEvent::kWorkflowExecutionCompleted: {
      auto* a = e.mutable_child_workflow_execution_completed();
      fill(a);
      *a->mutable_result() = close_event.workflow_execution_completed().result();
      break;
    }
    case v1::HistoryEvent::kWorkflowExecutionFailed: {
      auto* a = e.mutable_child_workflow_execution_failed();
      fill(a);
      *a->mutable_failure() = close_event.workflow_execution_failed().failure();
      break;
    }
    case v1::HistoryEvent::kWorkflowExecutionCanceled: {
      auto* a = e.mutable_child_workflow_execution_canceled();
      fill(a);
      *a->mutable_details() = close_event.workflow_execution_canceled().details();
      break;
    }
    case v1::HistoryEvent::kWorkflowExecutionTerminated:
      fill(e.mutable_child_workflow_execution_terminated());
      break;
    case v1::HistoryEvent::kWorkflowExecutionTimedOut: {
      auto* a = e.mutable_child_workflow_execution_timed_out();
      fill(a);
      a->set_timeout_type(close_event.workflow_execution_timed_out().timeout_type());
      break;
    }
    default:
      return Status::internal("child " + execution.workflow_id() + "/" + execution.run_id() +
                              " reported a close with event type " +
                              history::event_type_name(close_event.event_type()));
  }
  state_.mutable_children()->erase(it);
  deliver(std::move(e));
  expect_claim_checks();  // the child's result may be a reference
  return Applied::kYes;
}

Result<std::string> MutableState::apply_parent_close_policy(const v1::WorkflowExecution& parent,
                                                            v1::ParentClosePolicy policy) {
  if (state_.parent_execution().workflow_id() != parent.workflow_id() ||
      state_.parent_execution().run_id() != parent.run_id()) {
    stale();  // the id now names an unrelated run
    return std::string();
  }
  if (closed()) {
    if (!state_.next_run_id().empty()) {
      unchanged_ = true;  // the task row stays until the policy reaches the run it is for
      return state_.next_run_id();
    }
    stale();  // the chain has ended: nothing left to apply the policy to
    return std::string();
  }
  const std::string why = "parent workflow " + parent.workflow_id() + "/" + parent.run_id() + " closed";
  switch (policy) {
    case v1::PARENT_CLOSE_POLICY_REQUEST_CANCEL:
      if (state_.cancel_requested()) {
        stale();
        return std::string();
      }
      REPRISE_RETURN_IF_ERROR(request_cancel(why, "reprise-server"));
      return std::string();
    case v1::PARENT_CLOSE_POLICY_ABANDON:
      stale();
      return std::string();
    default:
      REPRISE_RETURN_IF_ERROR(terminate(why + " (parent close policy: terminate)", v1::Payloads(), "reprise-server"));
      return std::string();
  }
}

void MutableState::notify_close() {
  const auto& parent = state_.parent_execution();
  if (!parent.workflow_id().empty() && !continued_as_) {
    // The chain's next run (continue-as-new, retry) carries the parent on;
    // only the last run reports.
    // The row is this run's (its shard's owner runs it, telling the
    // parent's, docs/cluster.md); rows written before name the parent
    // instead and carry no `parent`.
    internal::TransferTask closed;
    closed.set_kind(internal::TransferTask::KIND_CHILD_CLOSED);
    closed.set_initiated_event_id(state_.parent_initiated_event_id());
    *closed.mutable_child() = execution_of(key_.workflow_id, key_.run_id);
    *closed.mutable_parent() = parent;
    add_transfer(key_, closed);
  }
  // In the order the children were initiated, not the map's: a protobuf
  // map's order differs from one map to another (its hash is seeded per
  // map), and the tasks' order is the order the policies apply in (the
  // simulator's runs must repeat).
  std::vector<int64_t> initiated;
  for (const auto& [id, child] : state_.children()) initiated.push_back(id);
  std::sort(initiated.begin(), initiated.end());
  for (const int64_t id : initiated) {
    const auto& child = state_.children().at(id);
    if (child.run_id().empty() || child.parent_close_policy() == v1::PARENT_CLOSE_POLICY_ABANDON) continue;
    internal::TransferTask policy;
    policy.set_kind(internal::TransferTask::KIND_PARENT_CLOSE_POLICY);
    *policy.mutable_parent() = execution_of(key_.workflow_id, key_.run_id);
    policy.set_policy(child.parent_close_policy());
    // The child may have continued as new since: its id's current run
    // decides. The row is this run's, like CHILD_CLOSED's; rows written
    // before are the child id's and carry no `child`.
    *policy.mutable_child() = execution_of(child.workflow_id(), "");
    add_transfer(key_, policy);
  }
  state_.clear_children();
}

}  // namespace reprise::engine
