// Workflow retries (Temporal's semantics): a run with a retry policy that
// fails or times out is followed, in the same transition, by a new run of
// the same workflow id — attempt + 1, the same input and policy — whose
// first workflow task waits for the policy's backoff. The close event names
// the new run, so a client waiting for the result follows it, and only the
// chain's last run reports to a parent.
#include <algorithm>

#include "engine/execution/mutable_state.hpp"
#include "engine/execution/state_util.hpp"
#include "reprise/detail/proto_time.hpp"

namespace reprise::engine {

using namespace state_util;

std::optional<std::chrono::nanoseconds> MutableState::retry_backoff_for(const v1::Failure& failure) const {
  if (!state_.has_retry_policy()) return std::nullopt;
  const v1::RetryPolicy& policy = state_.retry_policy();
  const int attempt = std::max(1, state_.attempt());
  if (!policy_allows_retry(policy, failure, attempt)) return std::nullopt;
  const std::chrono::nanoseconds backoff = retry_backoff(policy, attempt + 1);
  // The execution timeout bounds the whole chain: no attempt starts after it.
  if (state_.has_execution_expiration_time() && now_ + backoff > to_time(state_.execution_expiration_time())) {
    return std::nullopt;
  }
  return backoff;
}

Result<std::string> MutableState::retry_run(const v1::Failure& failure) {
  const std::optional<std::chrono::nanoseconds> backoff = retry_backoff_for(failure);
  if (!backoff) return std::string();
  if (!started_event_) return Status::internal("no started-event source to retry " + key_.to_string());
  Result<v1::WorkflowExecutionStartedEventAttributes> started = started_event_();
  if (!started) return started.status().with_context("retrying workflow execution " + key_.to_string());

  v1::StartWorkflowRequest next = next_run_request();
  *next.mutable_input() = started->input();

  RunLineage lineage;
  lineage.initiator = v1::CONTINUE_AS_NEW_INITIATOR_RETRY;
  lineage.attempt = std::max(1, state_.attempt()) + 1;
  lineage.continued_failure = failure;
  lineage.first_workflow_task_backoff = *backoff;
  REPRISE_RETURN_IF_ERROR(start_next_run(next, std::move(lineage)));
  return continued_as_->key().run_id;
}

Status MutableState::fail_run(const v1::Failure& failure, int64_t completed_event_id) {
  Result<std::string> next_run = retry_run(failure);
  if (!next_run) return next_run.status();
  v1::HistoryEvent e;
  auto* a = e.mutable_workflow_execution_failed();
  *a->mutable_failure() = failure;
  a->set_workflow_task_completed_event_id(completed_event_id);
  a->set_new_execution_run_id(*next_run);
  append(std::move(e));
  close(v1::WORKFLOW_EXECUTION_STATUS_FAILED);
  return Status::ok();
}

Status MutableState::time_out_run() {
  v1::Failure failure;
  failure.set_kind(v1::FAILURE_KIND_TIMEOUT);
  failure.set_timeout_type(v1::TIMEOUT_TYPE_START_TO_CLOSE);
  failure.set_source("server");
  failure.set_message("workflow run timed out");
  Result<std::string> next_run = retry_run(failure);
  if (!next_run) return next_run.status();
  end_workflow_task_for_close();
  v1::HistoryEvent e;
  auto* a = e.mutable_workflow_execution_timed_out();
  a->set_timeout_type(v1::TIMEOUT_TYPE_START_TO_CLOSE);
  a->set_new_execution_run_id(*next_run);
  append(std::move(e));
  close(v1::WORKFLOW_EXECUTION_STATUS_TIMED_OUT);
  return Status::ok();
}

Result<Applied> MutableState::end_workflow_backoff(const internal::TimerTask&) {
  if (!state_.first_workflow_task_backoff_pending()) return stale();
  state_.set_first_workflow_task_backoff_pending(false);
  wake_pending_ = true;  // with any signal that arrived during the backoff
  return Applied::kYes;
}

}  // namespace reprise::engine
