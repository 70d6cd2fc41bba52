// Workflow tasks: scheduled, started, completed, failed; sticky queues.
#include <algorithm>

#include "engine/execution/mutable_state.hpp"
#include "engine/execution/state_util.hpp"
#include "history/enum_name.hpp"
#include "reprise/detail/proto_time.hpp"

namespace reprise::engine {

using namespace state_util;

// --- workflow tasks ---

namespace {

v1::HistoryEvent scheduled_event(const internal::ExecutionState& state, int attempt) {
  v1::HistoryEvent e;
  auto* a = e.mutable_workflow_task_scheduled();
  *a->mutable_task_queue() = state.task_queue();
  *a->mutable_start_to_close_timeout() = state.workflow_task_timeout();
  a->set_attempt(attempt);
  return e;
}

}  // namespace

int64_t MutableState::record_workflow_task_scheduled() {
  const int attempt = std::max(1, state_.workflow_task_attempt());
  const bool transient = attempt > 1;
  const int64_t scheduled_event_id =
      transient ? builder_.next_event_id() : append(scheduled_event(state_, attempt)).event_id();
  auto* wt = state_.mutable_workflow_task();
  wt->Clear();
  wt->set_scheduled_event_id(scheduled_event_id);
  wt->set_attempt(attempt);
  wt->set_transient(transient);
  set_time(wt->mutable_scheduled_time(), now_);
  return scheduled_event_id;
}

void MutableState::schedule_workflow_task() {
  const int64_t scheduled_event_id = record_workflow_task_scheduled();
  const int attempt = state_.workflow_task().attempt();
  if (state_.sticky_queue().empty()) {
    add_workflow_task_row(false);
    return;
  }
  add_workflow_task_row(true);
  internal::TimerTask fallback;
  fallback.set_kind(internal::TimerTask::KIND_STICKY_TIMEOUT);
  fallback.set_scheduled_event_id(scheduled_event_id);
  fallback.set_attempt(attempt);
  add_timer(now_ + to_nanos(state_.sticky_schedule_to_start()), fallback);
}

void MutableState::add_workflow_task_row(bool sticky) {
  const auto& wt = state_.workflow_task();
  internal::TaskPayload payload;
  payload.set_scheduled_event_id(wt.scheduled_event_id());
  payload.set_attempt(wt.attempt());
  payload.set_sticky(sticky);
  if (sticky) {
    sticky_tasks_.push_back({0, TaskKind::kWorkflowTask, state_.sticky_queue(), key_, payload.SerializeAsString()});
  } else {
    tasks_.push_back({0, TaskKind::kWorkflowTask, state_.task_queue().name(), key_, payload.SerializeAsString()});
  }
}

void MutableState::set_sticky(const v1::StickyExecutionAttributes& attributes) {
  // A worker that does not ask for stickiness (or reports a failure) gets
  // none: its cache may be gone or wrong.
  if (attributes.worker_task_queue().name().empty()) {
    state_.clear_sticky_queue();
    state_.clear_sticky_schedule_to_start();
    return;
  }
  state_.set_sticky_queue(attributes.worker_task_queue().name());
  if (to_nanos(attributes.schedule_to_start_timeout()).count() > 0) {
    *state_.mutable_sticky_schedule_to_start() = attributes.schedule_to_start_timeout();
  } else {
    set_duration(state_.mutable_sticky_schedule_to_start(), config_.sticky_schedule_to_start);
  }
}

void MutableState::write_transient_scheduled() {
  auto* wt = state_.mutable_workflow_task();
  wt->set_transient(false);
  v1::HistoryEvent& written = builder_.append(scheduled_event(state_, wt->attempt()));
  *written.mutable_event_time() = wt->scheduled_time();
  if (written.event_id() != wt->scheduled_event_id()) {
    // Cannot happen while every append goes through append(); if it did, the
    // queued task would name the wrong event and never start: requeue it.
    wt->set_scheduled_event_id(written.event_id());
    add_workflow_task_row(false);
  }
}

Status MutableState::write_transient_events() {
  auto* wt = state_.mutable_workflow_task();
  if (!wt->transient()) return Status::ok();
  for (const v1::HistoryEvent& shown : wt->transient_events()) {
    v1::HistoryEvent& written = builder_.append(shown);
    *written.mutable_event_time() = shown.event_time();  // exactly what the worker saw
    if (written.event_id() != shown.event_id()) {
      return Status::internal("transient workflow task events of " + key_.to_string() + " lost their place (" +
                              std::to_string(shown.event_id()) + " became " + std::to_string(written.event_id()) + ")");
    }
  }
  wt->set_transient(false);
  wt->clear_transient_events();
  return Status::ok();
}

void MutableState::wake_workflow() {
  // A retry's backoff holds back its first task; its timer schedules it.
  if (closed() || state_.has_workflow_task() || state_.first_workflow_task_backoff_pending()) return;
  schedule_workflow_task();
}

std::optional<MutableState::EagerWorkflowTask> MutableState::start_eager_workflow_task(const std::string& sticky_queue,
                                                                                       const std::string& identity) {
  // Only the task this transition is about to schedule: not one already
  // scheduled or running (its events wait for it), not a retry (attempt > 1
  // waits for its backoff; stickiness ended with the failure anyway), not
  // one a retried run's backoff holds back, and only where it would go.
  if (!wake_pending_ || closed() || state_.has_workflow_task() || state_.first_workflow_task_backoff_pending() ||
      std::max(1, state_.workflow_task_attempt()) > 1 || state_.sticky_queue() != sticky_queue) {
    return std::nullopt;
  }
  wake_pending_ = false;
  internal::TaskPayload payload;
  payload.set_scheduled_event_id(record_workflow_task_scheduled());
  payload.set_attempt(1);
  payload.set_sticky(!sticky_queue.empty());
  EagerWorkflowTask eager{key_, payload.sticky(), {}};
  // No task row and no sticky schedule-to-start timer: it is started now,
  // with its start-to-close timer, as a poll would start it. It always
  // starts: the run is open and the payload names the task just scheduled.
  (void)start_workflow_task(payload, identity, eager.task);
  return eager;
}

Result<Applied> MutableState::start_workflow_task(const internal::TaskPayload& payload, const std::string& identity,
                                                  v1::PollWorkflowTaskResponse& response) {
  if (closed() || !state_.has_workflow_task()) return stale();
  auto* wt = state_.mutable_workflow_task();
  if (wt->scheduled_event_id() != payload.scheduled_event_id() || wt->attempt() != payload.attempt() ||
      wt->started_event_id() != 0) {
    return stale();
  }
  v1::HistoryEvent e;
  e.mutable_workflow_task_started()->set_scheduled_event_id(wt->scheduled_event_id());
  e.mutable_workflow_task_started()->set_identity(identity);
  v1::HistoryEvent* started = nullptr;
  int64_t before = state_.history_bytes();  // of the history before the started event
  int64_t events = state_.history_events() + static_cast<int64_t>(builder_.events().size()) + 1;
  if (wt->transient()) {
    // Shown to the worker, kept in the state, written only on completion.
    history::HistoryBuilder shown(wt->scheduled_event_id(), now_);
    v1::HistoryEvent& scheduled = shown.append(scheduled_event(state_, wt->attempt()));
    *scheduled.mutable_event_time() = wt->scheduled_time();
    shown.append(std::move(e));
    for (auto& ev : shown.take()) *wt->add_transient_events() = std::move(ev);
    started = wt->mutable_transient_events(1);
    before += history::event_bytes(wt->transient_events(0));
    ++events;
  } else {
    started = &append(std::move(e));
  }
  const int64_t started_event_id = started->event_id();
  // The history's size including this event, whose own size depends on the
  // number: settle it in two rounds (a varint grows by at most a byte).
  for (const auto& ev : builder_.events()) before += ev.event_id() == started_event_id ? 0 : history::event_bytes(ev);
  auto* a = started->mutable_workflow_task_started();
  for (int round = 0; round < 2; ++round) a->set_history_size_bytes(before + history::event_bytes(*started));
  const history::HistorySize projected{events, a->history_size_bytes()};
  a->set_suggest_continue_as_new(history::check_limits(projected, config_.history_limits) != history::LimitLevel::kOk);
  // What the worker is shown beyond the written history: the started event
  // (and a retry's scheduled one), which may be held uncommitted.
  if (wt->transient()) {
    for (const auto& shown : wt->transient_events()) *response.mutable_history()->add_events() = shown;
  } else {
    *response.mutable_history()->add_events() = *started;
  }
  const uint64_t start_id = next_start_id();
  wt->set_start_id(start_id);
  wt->set_started_event_id(started_event_id);
  wt->set_started_identity(identity);
  set_time(wt->mutable_started_time(), now_);

  internal::TimerTask timeout;
  timeout.set_kind(internal::TimerTask::KIND_WORKFLOW_TASK_TIMEOUT);
  timeout.set_scheduled_event_id(wt->scheduled_event_id());
  timeout.set_attempt(wt->attempt());
  add_timer(now_ + to_nanos(state_.workflow_task_timeout()), timeout);

  internal::TaskToken token;
  token.set_namespace_(key_.namespace_id);
  token.set_workflow_id(key_.workflow_id);
  token.set_run_id(key_.run_id);
  token.set_scheduled_event_id(wt->scheduled_event_id());
  token.set_started_event_id(started_event_id);
  token.set_attempt(wt->attempt());
  token.set_start_id(start_id);
  response.set_task_token(config_.task_tokens->encode(token));
  response.mutable_workflow_execution()->set_workflow_id(key_.workflow_id);
  response.mutable_workflow_execution()->set_run_id(key_.run_id);
  *response.mutable_workflow_type() = state_.workflow_type();
  response.set_previous_started_event_id(state_.last_completed_started_event_id());
  response.set_started_event_id(started_event_id);
  response.set_attempt(wt->attempt());
  return Applied::kYes;
}

Status MutableState::check_open() const {
  if (closed()) return Status::failed_precondition("workflow execution " + key_.to_string() + " is closed");
  return Status::ok();
}

Status MutableState::check_workflow_task_token(const internal::TaskToken& token) const {
  if (token.activity()) return Status::invalid_argument("task_token belongs to an activity task");
  if (closed() || !state_.has_workflow_task()) return Status::not_found(token_error("no workflow task is running"));
  const auto& wt = state_.workflow_task();
  if (wt.scheduled_event_id() != token.scheduled_event_id() || wt.started_event_id() != token.started_event_id() ||
      wt.attempt() != token.attempt() || wt.started_event_id() == 0) {
    return Status::not_found(token_error("the workflow task it names is no longer running"));
  }
  if (wt.start_id() != token.start_id()) {
    return Status::not_found(
        token_error("the workflow task it names was handed out again (the server restarted before its start was "
                    "committed)"));
  }
  return Status::ok();
}

namespace {

bool closes_workflow(const v1::Command& c) {
  switch (c.attributes_case()) {
    case v1::Command::kCompleteWorkflowExecution:
    case v1::Command::kFailWorkflowExecution:
    case v1::Command::kCancelWorkflowExecution:
    case v1::Command::kContinueAsNewWorkflowExecution:
      return true;
    default:
      return false;
  }
}

}  // namespace

Result<MutableState::CompletionAnswer> MutableState::complete_workflow_task(
    const internal::TaskToken& token, const v1::CompleteWorkflowTaskRequest& request) {
  REPRISE_RETURN_IF_ERROR(check_workflow_task_token(token));
  const auto wt = state_.workflow_task();
  if (state_.buffered_events_size() > 0 &&
      std::any_of(request.commands().begin(), request.commands().end(), closes_workflow)) {
    set_sticky({});
    return reject_closing_completion(request.identity());
  }
  if (request.sticky_attributes().worker_task_queue().name().size() > config_.max_id_length) {
    return Status::invalid_argument("sticky_attributes.worker_task_queue.name is too long");
  }
  set_sticky(request.sticky_attributes());
  REPRISE_RETURN_IF_ERROR(write_transient_events());
  v1::HistoryEvent e;
  auto* a = e.mutable_workflow_task_completed();
  a->set_scheduled_event_id(wt.scheduled_event_id());
  a->set_started_event_id(wt.started_event_id());
  a->set_identity(request.identity());
  const int64_t completed_event_id = append(std::move(e)).event_id();
  state_.clear_workflow_task();
  state_.set_workflow_task_attempt(1);
  state_.clear_last_workflow_task_failure();
  state_.set_last_completed_started_event_id(wt.started_event_id());

  for (size_t i = 0; i < static_cast<size_t>(request.commands_size()); ++i) {
    if (closed()) {
      return Status::invalid_argument("command " + std::to_string(i) + " (" +
                                      enum_name(request.commands(i).command_type()) +
                                      ") follows a command that closed the workflow");
    }
    REPRISE_RETURN_IF_ERROR(apply_command(request.commands(i), completed_event_id, i));
  }
  if (!closed()) flush_buffered_events();
  // A worker keeping a local activity running past the task's timeout.
  if (request.force_create_new_workflow_task() && !closed()) wake_pending_ = true;
  return CompletionAnswer{Status::ok(), start_eager_activities(request.identity())};
}

Result<MutableState::CompletionAnswer> MutableState::reject_closing_completion(const std::string& identity) {
  // The workflow would close without seeing what arrived while it ran: the
  // task fails, the new events are written, and a fresh task (not a retry of
  // broken code, so attempt 1 and no backoff) lets the workflow handle them.
  REPRISE_RETURN_IF_ERROR(write_transient_events());
  const auto wt = state_.workflow_task();
  const int arrived = state_.buffered_events_size();
  v1::HistoryEvent e;
  auto* a = e.mutable_workflow_task_failed();
  a->set_scheduled_event_id(wt.scheduled_event_id());
  a->set_started_event_id(wt.started_event_id());
  a->set_cause(v1::WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_EVENTS);
  a->mutable_failure()->set_message("the workflow tried to close, but new events arrived while its task ran");
  a->mutable_failure()->set_kind(v1::FAILURE_KIND_SERVER);
  a->mutable_failure()->set_source("server");
  a->set_identity(identity);
  append(std::move(e));
  state_.clear_workflow_task();
  state_.set_workflow_task_attempt(1);
  flush_buffered_events();
  // ABORTED, not FAILED_PRECONDITION: the worker drops such a task quietly,
  // while a completion refused for what it asks still fails its task.
  return CompletionAnswer{Status::aborted(
      std::to_string(arrived) +
      " new event(s) arrived while the workflow task ran; its commands were not applied and a new workflow task "
      "will deliver the events")};
}

Status MutableState::fail_workflow_task(const internal::TaskToken& token, const v1::FailWorkflowTaskRequest& request) {
  REPRISE_RETURN_IF_ERROR(check_workflow_task_token(token));
  const auto wt = state_.workflow_task();
  if (!wt.transient()) {  // the first failure is recorded; its retries leave no trace until one completes
    v1::HistoryEvent e;
    auto* a = e.mutable_workflow_task_failed();
    a->set_scheduled_event_id(wt.scheduled_event_id());
    a->set_started_event_id(wt.started_event_id());
    a->set_cause(request.cause());
    *a->mutable_failure() = request.failure();
    a->set_identity(request.identity());
    append(std::move(e));
  }
  state_.clear_workflow_task();
  set_sticky({});
  *state_.mutable_last_workflow_task_failure() = request.failure();
  const int next_attempt = wt.attempt() + 1;
  state_.set_workflow_task_attempt(next_attempt);
  flush_buffered_events(false);  // the retry sees what arrived meanwhile, after its backoff

  v1::RetryPolicy backoff_policy;
  set_duration(backoff_policy.mutable_maximum_interval(), config_.max_workflow_task_backoff);
  internal::TimerTask retry;
  retry.set_kind(internal::TimerTask::KIND_WORKFLOW_TASK_RETRY);
  retry.set_attempt(next_attempt);
  add_timer(now_ + retry_backoff(backoff_policy, next_attempt), retry);
  return Status::ok();
}

// --- workflow task timers ---

bool MutableState::times_out_running_task(const internal::TimerTask& t) const {
  if (!state_.has_workflow_task()) return false;
  const auto& wt = state_.workflow_task();
  return wt.scheduled_event_id() == t.scheduled_event_id() && wt.attempt() == t.attempt() && wt.started_event_id() != 0;
}

Result<Applied> MutableState::time_out_workflow_task(const internal::TimerTask& t) {
  if (!times_out_running_task(t)) return stale();
  const auto wt = state_.workflow_task();
  if (!wt.transient()) {  // a transient attempt's timeout leaves no trace
    v1::HistoryEvent e;
    auto* a = e.mutable_workflow_task_timed_out();
    a->set_scheduled_event_id(wt.scheduled_event_id());
    a->set_started_event_id(wt.started_event_id());
    a->set_timeout_type(v1::TIMEOUT_TYPE_START_TO_CLOSE);
    append(std::move(e));
  }
  state_.clear_workflow_task();
  set_sticky({});
  state_.set_workflow_task_attempt(wt.attempt() + 1);
  flush_buffered_events(false);
  schedule_workflow_task();  // the worker is gone or stuck: another may take it at once
  return Applied::kYes;
}

Result<Applied> MutableState::time_out_sticky_task(const internal::TimerTask& t) {
  // The sticky worker did not start the task in time: any worker may,
  // from full history. Nothing is written to history.
  if (!state_.has_workflow_task()) return stale();
  const auto& wt = state_.workflow_task();
  if (wt.scheduled_event_id() != t.scheduled_event_id() || wt.attempt() != t.attempt() || wt.started_event_id() != 0) {
    return stale();
  }
  set_sticky({});
  add_workflow_task_row(false);
  return Applied::kYes;
}

Result<Applied> MutableState::retry_workflow_task(const internal::TimerTask& t) {
  if (state_.has_workflow_task() || state_.workflow_task_attempt() != t.attempt()) return stale();
  schedule_workflow_task();
  return Applied::kYes;
}

}  // namespace reprise::engine
