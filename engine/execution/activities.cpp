// Activities: scheduled and canceled by commands, started by a poll,
// heartbeats, their retry and timeout timers, and their outcomes with retries.
#include <google/protobuf/util/message_differencer.h>

#include <algorithm>

#include "engine/execution/mutable_state.hpp"
#include "engine/execution/state_util.hpp"
#include "history/enum_name.hpp"
#include "reprise/detail/proto_time.hpp"

namespace reprise::engine {

using namespace state_util;

namespace {

v1::Failure timeout_failure(v1::TimeoutType type, const v1::Failure& last_failure) {
  v1::Failure f;
  f.set_kind(v1::FAILURE_KIND_TIMEOUT);
  f.set_timeout_type(type);
  f.set_source("server");
  f.set_message("activity timed out (" + enum_name(type) + ")");
  if (!last_failure.message().empty()) *f.mutable_cause() = last_failure;
  return f;
}

// The timeout whose deadline passed first, given that `fired` is due: two can
// pass before either timer is applied (its commit failed, the server was
// down), and Temporal reports the earlier one. A passed schedule-to-close
// deadline ends the activity, whichever attempt timer comes to say so.
v1::TimeoutType first_passed_activity_timeout(const internal::ActivityInfo& a, v1::TimeoutType fired) {
  if (!positive(a.schedule_to_close_timeout())) return fired;
  TimePoint fired_deadline;
  switch (fired) {
    case v1::TIMEOUT_TYPE_START_TO_CLOSE:
      fired_deadline = to_time(a.started_time()) + to_nanos(a.start_to_close_timeout());
      break;
    case v1::TIMEOUT_TYPE_HEARTBEAT:
      fired_deadline = to_time(a.has_last_heartbeat_time() ? a.last_heartbeat_time() : a.started_time()) +
                       to_nanos(a.heartbeat_timeout());
      break;
    case v1::TIMEOUT_TYPE_SCHEDULE_TO_START:
      fired_deadline = to_time(a.attempt_scheduled_time()) + to_nanos(a.schedule_to_start_timeout());
      break;
    default:
      return fired;
  }
  const TimePoint schedule_to_close = to_time(a.scheduled_time()) + to_nanos(a.schedule_to_close_timeout());
  return schedule_to_close <= fired_deadline ? v1::TIMEOUT_TYPE_SCHEDULE_TO_CLOSE : fired;
}

}  // namespace

// --- activities ---

Status MutableState::schedule_activity(const v1::ScheduleActivityTaskCommandAttributes& a, int64_t completed_event_id,
                                       size_t index) {
  const std::string where = "command " + std::to_string(index) + " (schedule activity '" + a.activity_id() + "')";
  if (a.activity_id().empty())
    return Status::invalid_argument("command " + std::to_string(index) + ": activity_id is required");
  if (a.activity_id().size() > config_.max_id_length)
    return Status::invalid_argument(where + ": activity_id is too long");
  if (a.activity_type().name().empty()) return Status::invalid_argument(where + ": activity_type.name is required");
  for (const auto& [id, info] : state_.activities()) {
    if (info.activity_id() == a.activity_id()) {
      return Status::invalid_argument(where + ": activity_id is already used by a pending activity");
    }
  }
  if (state_.activities_size() >= config_.max_pending_activities) {
    return Status::resource_exhausted(where + ": the workflow already has " +
                                      std::to_string(config_.max_pending_activities) + " pending activities");
  }
  for (const auto* d : {&a.schedule_to_close_timeout(), &a.schedule_to_start_timeout(), &a.start_to_close_timeout(),
                        &a.heartbeat_timeout()}) {
    if (negative(*d)) return Status::invalid_argument(where + ": timeouts must not be negative");
  }
  if (!positive(a.start_to_close_timeout()) && !positive(a.schedule_to_close_timeout())) {
    return Status::invalid_argument(where + ": start_to_close_timeout or schedule_to_close_timeout is required");
  }
  REPRISE_RETURN_IF_ERROR(check_retry_policy(a.retry_policy(), where + ": retry_policy"));

  v1::HistoryEvent e;
  auto* s = e.mutable_activity_task_scheduled();
  s->set_activity_id(a.activity_id());
  *s->mutable_activity_type() = a.activity_type();
  s->mutable_task_queue()->set_name(a.task_queue().name().empty() ? state_.task_queue().name() : a.task_queue().name());
  *s->mutable_input() = a.input();
  *s->mutable_schedule_to_close_timeout() = a.schedule_to_close_timeout();
  *s->mutable_schedule_to_start_timeout() = a.schedule_to_start_timeout();
  // Without its own start-to-close, an attempt may run until schedule-to-close.
  *s->mutable_start_to_close_timeout() =
      positive(a.start_to_close_timeout()) ? a.start_to_close_timeout() : a.schedule_to_close_timeout();
  *s->mutable_heartbeat_timeout() = a.heartbeat_timeout();
  s->set_workflow_task_completed_event_id(completed_event_id);
  *s->mutable_retry_policy() = a.retry_policy();
  const v1::HistoryEvent& written = append(std::move(e));
  const int64_t scheduled_event_id = written.event_id();
  const auto& sa = written.activity_task_scheduled();

  internal::ActivityInfo& info = (*state_.mutable_activities())[scheduled_event_id];
  info.set_activity_id(sa.activity_id());
  *info.mutable_activity_type() = sa.activity_type();
  *info.mutable_task_queue() = sa.task_queue();
  *info.mutable_schedule_to_close_timeout() = sa.schedule_to_close_timeout();
  *info.mutable_schedule_to_start_timeout() = sa.schedule_to_start_timeout();
  *info.mutable_start_to_close_timeout() = sa.start_to_close_timeout();
  *info.mutable_heartbeat_timeout() = sa.heartbeat_timeout();
  *info.mutable_retry_policy() = sa.retry_policy();
  info.set_attempt(1);
  set_time(info.mutable_scheduled_time(), now_);
  set_time(info.mutable_attempt_scheduled_time(), now_);
  // Eager: the worker completing the task polls the workflow's own queue;
  // an activity elsewhere is for other workers.
  if (a.request_eager_execution() && sa.task_queue().name() == state_.task_queue().name() &&
      static_cast<int>(eager_activities_.size()) < config_.max_eager_activities_per_task) {
    eager_activities_.emplace_back(scheduled_event_id, sa.input());
  } else {
    add_activity_task(info, scheduled_event_id);
  }

  if (positive(info.schedule_to_close_timeout())) {
    internal::TimerTask t;
    t.set_kind(internal::TimerTask::KIND_ACTIVITY_TIMEOUT);
    t.set_scheduled_event_id(scheduled_event_id);
    t.set_timeout_type(v1::TIMEOUT_TYPE_SCHEDULE_TO_CLOSE);  // any attempt
    add_timer(now_ + to_nanos(info.schedule_to_close_timeout()), t);
  }
  return Status::ok();
}

void MutableState::add_activity_task(const internal::ActivityInfo& activity, int64_t scheduled_event_id) {
  internal::TaskPayload payload;
  payload.set_scheduled_event_id(scheduled_event_id);
  payload.set_attempt(activity.attempt());
  tasks_.push_back({0, TaskKind::kActivityTask, activity.task_queue().name(), key_, payload.SerializeAsString()});
  if (positive(activity.schedule_to_start_timeout())) {
    internal::TimerTask t;
    t.set_kind(internal::TimerTask::KIND_ACTIVITY_TIMEOUT);
    t.set_scheduled_event_id(scheduled_event_id);
    t.set_attempt(activity.attempt());
    t.set_timeout_type(v1::TIMEOUT_TYPE_SCHEDULE_TO_START);
    add_timer(now_ + to_nanos(activity.schedule_to_start_timeout()), t);
  }
}

std::vector<v1::PollActivityTaskResponse> MutableState::start_eager_activities(const std::string& identity) {
  std::vector<v1::PollActivityTaskResponse> started;
  // A run the completion closed has no activities left to run.
  if (closed()) return started;
  for (auto& [scheduled_event_id, input] : eager_activities_) {
    v1::PollActivityTaskResponse& task = started.emplace_back();
    start_attempt(scheduled_event_id, state_.mutable_activities()->at(scheduled_event_id), identity, task);
    *task.mutable_input() = std::move(input);
  }
  eager_activities_.clear();
  return started;
}

Result<Applied> MutableState::start_activity(const internal::TaskPayload& payload, const std::string& identity,
                                             v1::PollActivityTaskResponse& response) {
  if (closed()) return stale();
  auto it = state_.mutable_activities()->find(payload.scheduled_event_id());
  if (it == state_.mutable_activities()->end()) return stale();
  internal::ActivityInfo& info = it->second;
  if (info.started() || info.attempt() != payload.attempt()) return stale();
  start_attempt(payload.scheduled_event_id(), info, identity, response);
  return Applied::kYes;
}

void MutableState::start_attempt(int64_t scheduled_event_id, internal::ActivityInfo& info, const std::string& identity,
                                 v1::PollActivityTaskResponse& response) {
  info.set_started(true);
  info.set_started_identity(identity);
  info.set_start_id(next_start_id());
  set_time(info.mutable_started_time(), now_);
  info.clear_last_heartbeat_time();

  internal::TimerTask t;
  t.set_kind(internal::TimerTask::KIND_ACTIVITY_TIMEOUT);
  t.set_scheduled_event_id(scheduled_event_id);
  t.set_attempt(info.attempt());
  t.set_timeout_type(v1::TIMEOUT_TYPE_START_TO_CLOSE);
  add_timer(now_ + to_nanos(info.start_to_close_timeout()), t);
  if (positive(info.heartbeat_timeout())) {
    t.set_timeout_type(v1::TIMEOUT_TYPE_HEARTBEAT);
    add_timer(now_ + to_nanos(info.heartbeat_timeout()), t);
  }

  internal::TaskToken token;
  token.set_namespace_(key_.namespace_id);
  token.set_workflow_id(key_.workflow_id);
  token.set_run_id(key_.run_id);
  token.set_scheduled_event_id(scheduled_event_id);
  token.set_attempt(info.attempt());
  token.set_activity(true);
  token.set_start_id(info.start_id());
  response.set_task_token(config_.task_tokens->encode(token));
  response.mutable_workflow_execution()->set_workflow_id(key_.workflow_id);
  response.mutable_workflow_execution()->set_run_id(key_.run_id);
  *response.mutable_workflow_type() = state_.workflow_type();
  response.set_activity_id(info.activity_id());
  *response.mutable_activity_type() = info.activity_type();
  *response.mutable_heartbeat_details() = info.heartbeat_details();
  *response.mutable_scheduled_time() = info.attempt_scheduled_time();
  *response.mutable_started_time() = info.started_time();
  response.set_attempt(info.attempt());
  *response.mutable_schedule_to_close_timeout() = info.schedule_to_close_timeout();
  *response.mutable_start_to_close_timeout() = info.start_to_close_timeout();
  *response.mutable_heartbeat_timeout() = info.heartbeat_timeout();
}

Result<internal::ActivityInfo*> MutableState::activity_for_token(const internal::TaskToken& token) {
  if (!token.activity()) return Status::invalid_argument("task_token belongs to a workflow task");
  if (closed()) return Status::not_found(token_error("the workflow execution is closed"));
  auto it = state_.mutable_activities()->find(token.scheduled_event_id());
  if (it == state_.mutable_activities()->end()) {
    return Status::not_found(token_error("the activity it names is no longer pending"));
  }
  if (it->second.attempt() != token.attempt() || !it->second.started()) {
    return Status::not_found(token_error("the activity attempt it names is no longer running"));
  }
  if (it->second.start_id() != token.start_id()) {
    return Status::not_found(
        token_error("the activity attempt it names was handed out again (the server restarted before its start was "
                    "committed)"));
  }
  return &it->second;
}

Result<bool> MutableState::heartbeat_activity(const internal::TaskToken& token, const v1::Payloads& details) {
  Result<internal::ActivityInfo*> activity = activity_for_token(token);
  if (!activity) return activity.status();
  *(*activity)->mutable_heartbeat_details() = details;
  set_time((*activity)->mutable_last_heartbeat_time(), now_);
  return (*activity)->cancel_requested();
}

void MutableState::close_activity(int64_t scheduled_event_id, v1::HistoryEvent outcome) {
  const internal::ActivityInfo& info = state_.activities().at(scheduled_event_id);
  if (info.started()) {
    v1::HistoryEvent started;
    auto* s = started.mutable_activity_task_started();
    s->set_scheduled_event_id(scheduled_event_id);
    s->set_identity(info.started_identity());
    s->set_attempt(info.attempt());
    *s->mutable_last_failure() = info.last_failure();
    const int64_t started_event_id = deliver(std::move(started)).event_id();
    // When buffered, the id is fixed up as the buffer is written.
    switch (outcome.attributes_case()) {
      case v1::HistoryEvent::kActivityTaskCompleted:
        outcome.mutable_activity_task_completed()->set_started_event_id(started_event_id);
        break;
      case v1::HistoryEvent::kActivityTaskFailed:
        outcome.mutable_activity_task_failed()->set_started_event_id(started_event_id);
        break;
      case v1::HistoryEvent::kActivityTaskTimedOut:
        outcome.mutable_activity_task_timed_out()->set_started_event_id(started_event_id);
        break;
      case v1::HistoryEvent::kActivityTaskCanceled:
        outcome.mutable_activity_task_canceled()->set_started_event_id(started_event_id);
        break;
      default:
        break;
    }
  }
  state_.mutable_activities()->erase(scheduled_event_id);
  deliver(std::move(outcome));
}

namespace {

// The activity's outcome sits among the events buffered while the workflow
// task ran.
bool closed_in_buffer(const internal::ExecutionState& state, int64_t scheduled_event_id) {
  for (const v1::HistoryEvent& e : state.buffered_events()) {
    const int64_t closed = e.has_activity_task_completed()   ? e.activity_task_completed().scheduled_event_id()
                           : e.has_activity_task_failed()    ? e.activity_task_failed().scheduled_event_id()
                           : e.has_activity_task_timed_out() ? e.activity_task_timed_out().scheduled_event_id()
                           : e.has_activity_task_canceled()  ? e.activity_task_canceled().scheduled_event_id()
                                                             : 0;
    if (closed == scheduled_event_id) return true;
  }
  return false;
}

}  // namespace

Status MutableState::request_cancel_activity(int64_t scheduled_event_id, int64_t completed_event_id,
                                             const std::string& where) {
  auto it = state_.mutable_activities()->find(scheduled_event_id);
  const bool pending = it != state_.mutable_activities()->end();
  // An activity that closed while the workflow's task ran: the request is
  // recorded and its outcome, written next, is what the workflow sees (as in
  // Temporal), instead of failing the task over a race it could not see.
  if (!pending && !closed_in_buffer(state_, scheduled_event_id)) {
    return Status::invalid_argument(where + ": no pending activity was scheduled by event " +
                                    std::to_string(scheduled_event_id));
  }
  v1::HistoryEvent e;
  auto* a = e.mutable_activity_task_cancel_requested();
  a->set_scheduled_event_id(scheduled_event_id);
  a->set_workflow_task_completed_event_id(completed_event_id);
  const int64_t requested_event_id = append(std::move(e)).event_id();
  if (!pending) return Status::ok();
  internal::ActivityInfo& activity = it->second;
  activity.set_cancel_requested_event_id(requested_event_id);
  if (activity.started()) {
    activity.set_cancel_requested(true);  // the worker learns it from its next heartbeat
    return Status::ok();
  }
  // Not running anywhere: canceled at once.
  v1::HistoryEvent canceled;
  auto* c = canceled.mutable_activity_task_canceled();
  c->set_latest_cancel_requested_event_id(requested_event_id);
  c->set_scheduled_event_id(scheduled_event_id);
  append(std::move(canceled));
  state_.mutable_activities()->erase(it);
  wake_pending_ = true;
  return Status::ok();
}

Status MutableState::complete_activity(const internal::TaskToken& token, const v1::Payloads& result,
                                       const std::string& identity) {
  Result<internal::ActivityInfo*> activity = activity_for_token(token);
  if (!activity) return activity.status();
  v1::HistoryEvent e;
  auto* a = e.mutable_activity_task_completed();
  *a->mutable_result() = result;
  a->set_scheduled_event_id(token.scheduled_event_id());
  a->set_identity(identity);
  close_activity(token.scheduled_event_id(), std::move(e));
  return Status::ok();
}

bool MutableState::holds_result_of(const internal::TaskToken& token, const v1::Payloads& result) const {
  if (!resumed_held_) return false;
  int64_t attempt = 0;
  for (const v1::HistoryEvent& e : builder_.events()) {
    if (e.has_activity_task_started() && e.activity_task_started().scheduled_event_id() == token.scheduled_event_id()) {
      attempt = e.activity_task_started().attempt();
    }
    if (e.has_activity_task_completed() &&
        e.activity_task_completed().scheduled_event_id() == token.scheduled_event_id()) {
      return attempt == token.attempt() &&
             google::protobuf::util::MessageDifferencer::Equals(e.activity_task_completed().result(), result);
    }
  }
  return false;
}

bool MutableState::should_retry(const internal::ActivityInfo& activity, const v1::Failure& failure) const {
  // The workflow asked for the activity to stop: a timeout or failure ends
  // it rather than starting an attempt nobody wants (Temporal's
  // RETRY_STATE_CANCEL_REQUESTED).
  if (activity.cancel_requested()) return false;
  const auto& policy = activity.retry_policy();
  if (!policy_allows_retry(policy, failure, activity.attempt())) return false;
  if (positive(activity.schedule_to_close_timeout())) {
    const TimePoint deadline = to_time(activity.scheduled_time()) + to_nanos(activity.schedule_to_close_timeout());
    if (now_ + retry_backoff(policy, activity.attempt() + 1) >= deadline) return false;
  }
  return true;
}

void MutableState::retry_activity(internal::ActivityInfo& activity, int64_t scheduled_event_id,
                                  const v1::Failure& failure) {
  const int next = activity.attempt() + 1;
  const TimePoint at = now_ + retry_backoff(activity.retry_policy(), next);
  activity.set_attempt(next);
  activity.set_started(false);
  activity.clear_started_identity();
  *activity.mutable_last_failure() = failure;
  set_time(activity.mutable_next_attempt_time(), at);
  internal::TimerTask t;
  t.set_kind(internal::TimerTask::KIND_ACTIVITY_RETRY);
  t.set_scheduled_event_id(scheduled_event_id);
  t.set_attempt(next);
  add_timer(at, t);
}

Status MutableState::fail_activity(const internal::TaskToken& token, const v1::Failure& failure,
                                   const v1::Payloads& last_heartbeat_details, const std::string& identity) {
  Result<internal::ActivityInfo*> found = activity_for_token(token);
  if (!found) return found.status();
  internal::ActivityInfo& activity = **found;
  if (last_heartbeat_details.payloads_size() > 0) *activity.mutable_heartbeat_details() = last_heartbeat_details;
  if (should_retry(activity, failure)) {
    retry_activity(activity, token.scheduled_event_id(), failure);
    return Status::ok();
  }
  v1::HistoryEvent e;
  auto* a = e.mutable_activity_task_failed();
  *a->mutable_failure() = failure;
  a->set_scheduled_event_id(token.scheduled_event_id());
  a->set_identity(identity);
  close_activity(token.scheduled_event_id(), std::move(e));
  return Status::ok();
}

Status MutableState::report_activity_canceled(const internal::TaskToken& token, const v1::Payloads& details,
                                              const std::string& identity) {
  Result<internal::ActivityInfo*> found = activity_for_token(token);
  if (!found) return found.status();
  if (!(*found)->cancel_requested()) {
    return Status::failed_precondition("activity '" + (*found)->activity_id() +
                                       "' was not asked to cancel; report its completion or failure instead");
  }
  v1::HistoryEvent e;
  auto* a = e.mutable_activity_task_canceled();
  *a->mutable_details() = details;
  a->set_latest_cancel_requested_event_id((*found)->cancel_requested_event_id());
  a->set_scheduled_event_id(token.scheduled_event_id());
  a->set_identity(identity);
  close_activity(token.scheduled_event_id(), std::move(e));
  return Status::ok();
}

// --- activity timers ---

Result<Applied> MutableState::start_activity_retry(const internal::TimerTask& t) {
  auto it = state_.mutable_activities()->find(t.scheduled_event_id());
  if (it == state_.mutable_activities()->end() || it->second.attempt() != t.attempt() || it->second.started()) {
    return stale();
  }
  set_time(it->second.mutable_attempt_scheduled_time(), now_);
  it->second.clear_next_attempt_time();
  add_activity_task(it->second, t.scheduled_event_id());
  return Applied::kYes;
}

Result<Applied> MutableState::time_out_activity(const internal::TimerTask& t) {
  auto it = state_.mutable_activities()->find(t.scheduled_event_id());
  if (it == state_.mutable_activities()->end()) return stale();
  internal::ActivityInfo& activity = it->second;
  const bool any_attempt = t.timeout_type() == v1::TIMEOUT_TYPE_SCHEDULE_TO_CLOSE;
  if (!any_attempt && activity.attempt() != t.attempt()) return stale();
  const bool running = activity.started();
  if ((t.timeout_type() == v1::TIMEOUT_TYPE_SCHEDULE_TO_START && running) ||
      ((t.timeout_type() == v1::TIMEOUT_TYPE_START_TO_CLOSE || t.timeout_type() == v1::TIMEOUT_TYPE_HEARTBEAT) &&
       !running)) {
    return stale();
  }
  if (t.timeout_type() == v1::TIMEOUT_TYPE_HEARTBEAT && activity.has_last_heartbeat_time()) {
    const TimePoint due = to_time(activity.last_heartbeat_time()) + to_nanos(activity.heartbeat_timeout());
    if (due > now_) {  // heartbeats came in: check again when the latest one lapses
      add_timer(due, t);
      return Applied::kYes;
    }
  }
  const v1::TimeoutType type = first_passed_activity_timeout(activity, t.timeout_type());
  const v1::Failure failure = timeout_failure(type, activity.last_failure());
  const bool retryable = type == v1::TIMEOUT_TYPE_START_TO_CLOSE || type == v1::TIMEOUT_TYPE_HEARTBEAT;
  if (retryable && should_retry(activity, failure)) {
    retry_activity(activity, t.scheduled_event_id(), failure);
    return Applied::kYes;
  }
  v1::HistoryEvent e;
  auto* a = e.mutable_activity_task_timed_out();
  *a->mutable_failure() = failure;
  a->set_scheduled_event_id(t.scheduled_event_id());
  close_activity(t.scheduled_event_id(), std::move(e));
  return Applied::kYes;
}

}  // namespace reprise::engine
