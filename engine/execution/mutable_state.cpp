#include "engine/execution/mutable_state.hpp"

#include <algorithm>

#include "engine/claim_check.hpp"
#include "engine/execution/state_util.hpp"
#include "history/enum_name.hpp"
#include "history/stored_proto.hpp"
#include "reprise/detail/proto_time.hpp"

namespace reprise::engine {

using namespace state_util;

namespace {

// Request ids of recent signals kept per execution for deduplication.
constexpr int kSignalRequestIdsKept = 1000;

}  // namespace

MutableState::MutableState(ExecutionKey key, TimePoint now, const EngineConfig& config)
    : MutableState(std::move(key), internal::ExecutionState(), 0, 1, now, config) {}

MutableState::MutableState(ExecutionKey key, internal::ExecutionState state, int64_t version, int64_t next_event_id,
                           TimePoint now, const EngineConfig& config)
    : key_(std::move(key)),
      state_(std::move(state)),
      version_(version),
      now_(now),
      config_(config),
      builder_(next_event_id, now) {}

Result<MutableState> MutableState::load(const ExecutionRecord& record, TimePoint now, const EngineConfig& config) {
  internal::ExecutionState state;
  if (!history::parse_stored(record.state, state)) {
    return Status::data_loss("state of execution " + record.key.to_string() + " does not parse");
  }
  return MutableState(record.key, std::move(state), record.version, record.next_event_id, now, config);
}

MutableState MutableState::resume(const ExecutionRecord& record, const HeldChange& held, TimePoint now,
                                  const EngineConfig& config) {
  MutableState ms(record.key, held.state, record.version, record.next_event_id, now, config);
  for (const v1::HistoryEvent& e : held.events) {
    // The ids follow on from the record's; the times are the hand-out's.
    *ms.builder_.append(e).mutable_event_time() = e.event_time();
  }
  ms.timers_ = held.timers;
  ms.resumed_held_ = true;
  return ms;
}

bool MutableState::only_started_tasks() const {
  if (!tasks_.empty() || !sticky_tasks_.empty() || !eager_activities_.empty() || wake_pending_ || became_closed_ ||
      stale_ || unchanged_ || claim_checks_ || continued_as_ || started_child_ || closed()) {
    return false;
  }
  history::HistorySize size{state_.history_events(), state_.history_bytes()};
  size.add(builder_.events());
  for (const v1::HistoryEvent& e : state_.buffered_events()) size.add(e);
  return history::check_limits(size, config_.history_limits) != history::LimitLevel::kFail;
}

HeldChange MutableState::hold() && {
  return HeldChange{version_, std::move(state_), builder_.take(), std::move(timers_)};
}

MutableState MutableState::salvage(const ExecutionRecord& record, TimePoint now, const EngineConfig& config) {
  internal::ExecutionState state;
  state.set_status(v1::WORKFLOW_EXECUTION_STATUS_RUNNING);
  return MutableState(record.key, std::move(state), record.version, record.next_event_id, now, config);
}

// --- events ---

v1::HistoryEvent& MutableState::append(v1::HistoryEvent event) {
  // History moves on under a transient task that has not started: it becomes
  // a normal one first, so its scheduled event keeps the id it was given.
  if (state_.has_workflow_task() && state_.workflow_task().transient() &&
      state_.workflow_task().started_event_id() == 0) {
    write_transient_scheduled();
  }
  return builder_.append(std::move(event));
}

v1::HistoryEvent& MutableState::deliver(v1::HistoryEvent event) {
  if (state_.has_workflow_task() && state_.workflow_task().started_event_id() != 0) {
    auto* buffered = state_.add_buffered_events();
    *buffered = std::move(event);
    return *buffered;
  }
  wake_pending_ = true;
  return append(std::move(event));
}

void MutableState::flush_buffered_events(bool wake) {
  int64_t last_activity_started = 0;
  for (auto& e : *state_.mutable_buffered_events()) {
    // Activity close events point at the started event just before them,
    // whose id is only known now.
    v1::HistoryEvent& written = append(std::move(e));
    switch (written.attributes_case()) {
      case v1::HistoryEvent::kActivityTaskStarted:
        last_activity_started = written.event_id();
        break;
      case v1::HistoryEvent::kActivityTaskCompleted:
        written.mutable_activity_task_completed()->set_started_event_id(last_activity_started);
        break;
      case v1::HistoryEvent::kActivityTaskFailed:
        written.mutable_activity_task_failed()->set_started_event_id(last_activity_started);
        break;
      case v1::HistoryEvent::kActivityTaskTimedOut:
        written.mutable_activity_task_timed_out()->set_started_event_id(last_activity_started);
        break;
      case v1::HistoryEvent::kActivityTaskCanceled:
        written.mutable_activity_task_canceled()->set_started_event_id(last_activity_started);
        break;
      case v1::HistoryEvent::kChildWorkflowExecutionStarted: {
        auto child = state_.mutable_children()->find(written.child_workflow_execution_started().initiated_event_id());
        if (child != state_.mutable_children()->end()) child->second.set_started_event_id(written.event_id());
        break;
      }
      default:
        break;
    }
  }
  if (wake && state_.buffered_events_size() > 0) wake_pending_ = true;
  state_.clear_buffered_events();
}

void MutableState::end_workflow_task_for_close() {
  if (state_.has_workflow_task()) {
    const auto wt = state_.workflow_task();
    // A transient attempt (a retry of a failing task) has no events to close.
    if (wt.started_event_id() != 0 && !wt.transient()) {
      v1::HistoryEvent e;
      auto* a = e.mutable_workflow_task_failed();
      a->set_scheduled_event_id(wt.scheduled_event_id());
      a->set_started_event_id(wt.started_event_id());
      a->set_cause(v1::WORKFLOW_TASK_FAILED_CAUSE_FORCE_CLOSE);
      a->set_identity("reprise-server");
      append(std::move(e));
    }
    state_.clear_workflow_task();
  }
  flush_buffered_events(false);
}

// --- start ---

Status MutableState::check_new_run(const v1::WorkflowType& type, const std::string& task_queue,
                                   const google::protobuf::Duration& execution_timeout,
                                   const google::protobuf::Duration& run_timeout,
                                   const google::protobuf::Duration& task_timeout, const v1::RetryPolicy& retry_policy,
                                   const std::string& where) const {
  const std::string prefix = where.empty() ? "" : where + ": ";
  const std::string limit = " is longer than " + std::to_string(config_.max_id_length) + " bytes";
  if (type.name().empty()) return Status::invalid_argument(prefix + "workflow_type.name is required");
  if (type.name().size() > config_.max_id_length)
    return Status::invalid_argument(prefix + "workflow_type.name" + limit);
  if (task_queue.size() > config_.max_id_length) return Status::invalid_argument(prefix + "task_queue.name" + limit);
  for (const auto* d : {&execution_timeout, &run_timeout, &task_timeout}) {
    if (negative(*d)) return Status::invalid_argument(prefix + "workflow timeouts must not be negative");
  }
  return check_retry_policy(retry_policy, prefix + "retry_policy");
}

Status MutableState::start(const v1::StartWorkflowRequest& r, const RunLineage& lineage) {
  if (version_ != 0) return Status::failed_precondition("execution " + key_.to_string() + " has already started");
  if (r.task_queue().name().empty()) return Status::invalid_argument("task_queue.name is required");
  REPRISE_RETURN_IF_ERROR(check_new_run(r.workflow_type(), r.task_queue().name(), r.workflow_execution_timeout(),
                                        r.workflow_run_timeout(), r.workflow_task_timeout(), r.retry_policy(), ""));
  state_.mutable_workflow_type()->CopyFrom(r.workflow_type());
  state_.mutable_task_queue()->set_name(r.task_queue().name());
  state_.mutable_task_queue()->set_kind(v1::TASK_QUEUE_KIND_NORMAL);
  if (positive(r.workflow_task_timeout())) {
    *state_.mutable_workflow_task_timeout() = r.workflow_task_timeout();
  } else {
    set_duration(state_.mutable_workflow_task_timeout(), config_.default_workflow_task_timeout);
  }
  *state_.mutable_workflow_run_timeout() = r.workflow_run_timeout();
  *state_.mutable_workflow_execution_timeout() = r.workflow_execution_timeout();
  set_time(state_.mutable_start_time(), now_);
  state_.set_status(v1::WORKFLOW_EXECUTION_STATUS_RUNNING);
  state_.set_start_request_id(r.request_id());
  state_.set_workflow_task_attempt(1);
  state_.set_first_run_id(lineage.first_run_id.empty() ? key_.run_id : lineage.first_run_id);
  if (r.has_retry_policy()) *state_.mutable_retry_policy() = r.retry_policy();
  state_.set_attempt(lineage.attempt);
  const std::chrono::nanoseconds backoff = lineage.first_workflow_task_backoff;
  std::optional<TimePoint> expiration = lineage.execution_expiration;
  if (!expiration && positive(r.workflow_execution_timeout())) {
    expiration = now_ + to_nanos(r.workflow_execution_timeout());
  }
  if (expiration) set_time(state_.mutable_execution_expiration_time(), *expiration);
  if (!lineage.parent.workflow_id().empty()) {
    *state_.mutable_parent_execution() = lineage.parent;
    state_.set_parent_initiated_event_id(lineage.parent_initiated_event_id);
  }

  v1::HistoryEvent e;
  auto* a = e.mutable_workflow_execution_started();
  *a->mutable_workflow_type() = r.workflow_type();
  *a->mutable_task_queue() = state_.task_queue();
  *a->mutable_input() = r.input();
  *a->mutable_workflow_execution_timeout() = r.workflow_execution_timeout();
  *a->mutable_workflow_run_timeout() = r.workflow_run_timeout();
  *a->mutable_workflow_task_timeout() = state_.workflow_task_timeout();
  a->set_original_execution_run_id(key_.run_id);
  a->set_first_execution_run_id(state_.first_run_id());
  a->set_continued_execution_run_id(lineage.continued_run_id);
  *a->mutable_parent_execution() = state_.parent_execution();
  a->set_parent_initiated_event_id(state_.parent_initiated_event_id());
  if (expiration) set_time(a->mutable_execution_expiration_time(), *expiration);
  a->set_attempt(lineage.attempt);
  if (r.has_retry_policy()) *a->mutable_retry_policy() = r.retry_policy();
  a->set_identity(r.identity());
  a->set_request_id(r.request_id());
  a->set_initiator(lineage.initiator);
  *a->mutable_continued_failure() = lineage.continued_failure;
  if (backoff.count() > 0) set_duration(a->mutable_first_workflow_task_backoff(), backoff);
  append(std::move(e));

  // The run timeout bounds this run from its first workflow task on (after
  // a retry's backoff, as in Temporal); the execution timeout bounds the
  // whole chain. Whichever ends first times the run out.
  std::optional<TimePoint> deadline = expiration;
  if (positive(r.workflow_run_timeout())) {
    const TimePoint run_deadline = now_ + backoff + to_nanos(r.workflow_run_timeout());
    if (!deadline || run_deadline < *deadline) deadline = run_deadline;
  }
  if (deadline) {
    internal::TimerTask t;
    t.set_kind(internal::TimerTask::KIND_RUN_TIMEOUT);
    add_timer(*deadline, t);
  }
  if (backoff.count() > 0) {
    // A durable timer row, so the retry starts after a restart too.
    state_.set_first_workflow_task_backoff_pending(true);
    internal::TimerTask t;
    t.set_kind(internal::TimerTask::KIND_WORKFLOW_BACKOFF);
    add_timer(now_ + backoff, t);
    return Status::ok();
  }
  wake_pending_ = true;  // the first workflow task, after any signal that came with the start
  return Status::ok();
}

// --- commands ---

Status MutableState::apply_command(const v1::Command& c, int64_t completed_event_id, size_t index) {
  const std::string where = "command " + std::to_string(index) + " (" + enum_name(c.command_type()) + ")";
  using C = v1::Command;
  // The attributes' field number is the command type's number plus one.
  if (c.attributes_case() != C::ATTRIBUTES_NOT_SET && static_cast<int>(c.attributes_case()) != c.command_type() + 1) {
    return Status::invalid_argument(where + ": command_type does not match its attributes (" +
                                    C::descriptor()->FindFieldByNumber(c.attributes_case())->name() + ")");
  }
  switch (c.attributes_case()) {
    case C::kScheduleActivityTask:
      return schedule_activity(c.schedule_activity_task(), completed_event_id, index);
    case C::kRequestCancelActivityTask:
      return request_cancel_activity(c.request_cancel_activity_task().scheduled_event_id(), completed_event_id, where);
    case C::kStartTimer:
      return start_timer(c.start_timer(), completed_event_id, where);
    case C::kCancelTimer:
      return cancel_timer(c.cancel_timer().timer_id(), completed_event_id, where);
    case C::kCompleteWorkflowExecution:
      return complete_run(c.complete_workflow_execution(), completed_event_id);
    case C::kFailWorkflowExecution:
      return fail_run(c.fail_workflow_execution().failure(), completed_event_id);
    case C::kCancelWorkflowExecution:
      return cancel_run(c.cancel_workflow_execution(), completed_event_id);
    case C::kStartChildWorkflowExecution:
      return initiate_child(c.start_child_workflow_execution(), completed_event_id, where);
    case C::kContinueAsNewWorkflowExecution:
      return continue_as_new(c.continue_as_new_workflow_execution(), completed_event_id, where);
    case C::kSignalExternalWorkflowExecution:
      return initiate_signal_external(c.signal_external_workflow_execution(), completed_event_id, where);
    case C::kRequestCancelExternalWorkflowExecution:
      return initiate_cancel_external(c.request_cancel_external_workflow_execution(), completed_event_id, where);
    case C::kRecordMarker:
      return record_marker(c.record_marker(), completed_event_id, where);
    case C::ATTRIBUTES_NOT_SET:
      return Status::invalid_argument(where + ": the command has no attributes");
    default:
      return Status(StatusCode::kUnimplemented, where + " is not supported by this server yet");
  }
}

void MutableState::close(v1::WorkflowExecutionStatus status) {
  state_.set_status(status);
  set_time(state_.mutable_close_time(), now_);
  state_.clear_workflow_task();
  state_.clear_activities();
  state_.clear_timers();
  state_.clear_external_requests();  // their transfer tasks find nothing pending and drop themselves
  notify_close();
  became_closed_ = true;
}

// --- client operations ---

Status MutableState::signal(const std::string& name, const v1::Payloads& input, const std::string& identity,
                            const std::string& request_id) {
  REPRISE_RETURN_IF_ERROR(check_open());
  if (name.empty()) return Status::invalid_argument("signal_name is required");
  if (name.size() > config_.max_id_length) return Status::invalid_argument("signal_name is too long");
  if (!request_id.empty()) {
    // A retried signal (same request id) is recorded once; the ids kept are
    // the newest, enough for any client's retries.
    auto* seen = state_.mutable_signal_request_ids();
    if (std::find(seen->begin(), seen->end(), request_id) != seen->end()) {
      unchanged_ = true;
      return Status::ok();
    }
    if (seen->size() >= kSignalRequestIdsKept) seen->DeleteSubrange(0, 1);
    seen->Add(std::string(request_id));
  }
  v1::HistoryEvent e;
  auto* a = e.mutable_workflow_execution_signaled();
  a->set_signal_name(name);
  *a->mutable_input() = input;
  a->set_identity(identity);
  a->set_request_id(request_id);
  REPRISE_RETURN_IF_ERROR(check_buffer_room(e));
  deliver(std::move(e));
  return Status::ok();
}

Status MutableState::check_buffer_room(const v1::HistoryEvent& event) const {
  if (!state_.has_workflow_task() || state_.workflow_task().started_event_id() == 0) return Status::ok();
  history::HistorySize buffered;
  for (const v1::HistoryEvent& e : state_.buffered_events()) buffered.add(e);
  buffered.add(event);
  if (buffered.events > config_.max_buffered_events || buffered.bytes > config_.max_buffered_bytes) {
    return Status::resource_exhausted(
        "workflow execution " + key_.to_string() + " has " + std::to_string(buffered.events - 1) + " events (" +
        std::to_string(buffered.bytes - history::event_bytes(event)) +
        " bytes) waiting for its running workflow task to finish, the most it may hold (" +
        std::to_string(config_.max_buffered_events) + " events, " + std::to_string(config_.max_buffered_bytes) +
        " bytes); retry once the task completes");
  }
  return Status::ok();
}

Status MutableState::request_cancel(const std::string& reason, const std::string& identity) {
  REPRISE_RETURN_IF_ERROR(check_open());
  if (state_.cancel_requested()) return Status::ok();  // asking twice changes nothing
  state_.set_cancel_requested(true);
  v1::HistoryEvent e;
  auto* a = e.mutable_workflow_execution_cancel_requested();
  a->set_cause(reason);
  a->set_identity(identity);
  deliver(std::move(e));
  return Status::ok();
}

Status MutableState::complete_run(const v1::CompleteWorkflowExecutionCommandAttributes& c, int64_t completed_event_id) {
  v1::HistoryEvent e;
  auto* a = e.mutable_workflow_execution_completed();
  *a->mutable_result() = c.result();
  a->set_workflow_task_completed_event_id(completed_event_id);
  append(std::move(e));
  close(v1::WORKFLOW_EXECUTION_STATUS_COMPLETED);
  return Status::ok();
}

Status MutableState::cancel_run(const v1::CancelWorkflowExecutionCommandAttributes& c, int64_t completed_event_id) {
  v1::HistoryEvent e;
  auto* a = e.mutable_workflow_execution_canceled();
  *a->mutable_details() = c.details();
  a->set_workflow_task_completed_event_id(completed_event_id);
  append(std::move(e));
  close(v1::WORKFLOW_EXECUTION_STATUS_CANCELED);
  return Status::ok();
}

Status MutableState::terminate(const std::string& reason, const v1::Payloads& details, const std::string& identity) {
  REPRISE_RETURN_IF_ERROR(check_open());
  end_workflow_task_for_close();
  v1::HistoryEvent e;
  auto* a = e.mutable_workflow_execution_terminated();
  a->set_reason(reason);
  *a->mutable_details() = details;
  a->set_identity(identity);
  append(std::move(e));
  close(v1::WORKFLOW_EXECUTION_STATUS_TERMINATED);
  return Status::ok();
}

// --- markers ---

Status MutableState::record_marker(const v1::RecordMarkerCommandAttributes& m, int64_t completed_event_id,
                                   const std::string& where) {
  if (m.marker_name().empty()) return Status::invalid_argument(where + ": marker_name is required");
  v1::HistoryEvent e;
  auto* a = e.mutable_marker_recorded();
  a->set_marker_name(m.marker_name());
  *a->mutable_details() = m.details();
  *a->mutable_failure() = m.failure();
  a->set_workflow_task_completed_event_id(completed_event_id);
  append(std::move(e));
  return Status::ok();
}

// --- timers ---

void MutableState::add_timer(TimePoint fire_at, const internal::TimerTask& task) {
  timers_.push_back({0, fire_at, key_, task.SerializeAsString()});
}

Result<Applied> MutableState::fire_timer(const internal::TimerTask& t) {
  if (closed()) return stale();
  using K = internal::TimerTask;
  switch (t.kind()) {
    case K::KIND_USER_TIMER:
      return fire_user_timer(t);
    case K::KIND_WORKFLOW_TASK_TIMEOUT:
      return time_out_workflow_task(t);
    case K::KIND_STICKY_TIMEOUT:
      return time_out_sticky_task(t);
    case K::KIND_WORKFLOW_TASK_RETRY:
      return retry_workflow_task(t);
    case K::KIND_ACTIVITY_RETRY:
      return start_activity_retry(t);
    case K::KIND_ACTIVITY_TIMEOUT:
      return time_out_activity(t);
    case K::KIND_RUN_TIMEOUT:
      REPRISE_RETURN_IF_ERROR(time_out_run());
      return Applied::kYes;
    case K::KIND_WORKFLOW_BACKOFF:
      return end_workflow_backoff(t);
    default:
      return Status::data_loss("timer of execution " + key_.to_string() + " has unknown kind " +
                               std::to_string(t.kind()));
  }
}

bool MutableState::stale_already(const TimerRecord& timer) const {
  if (closed()) return true;
  internal::TimerTask task;
  if (!task.ParseFromString(timer.payload)) return false;
  return task.kind() == internal::TimerTask::KIND_WORKFLOW_TASK_TIMEOUT && !times_out_running_task(task);
}

Applied MutableState::stale() {
  stale_ = true;
  return Applied::kStale;
}

// --- finishing ---

void MutableState::enforce_history_limits() {
  history::HistorySize size{state_.history_events(), state_.history_bytes()};
  size.add(builder_.events());
  for (const v1::HistoryEvent& e : state_.buffered_events()) size.add(e);  // history once the task completes
  if (closed() || history::check_limits(size, config_.history_limits) != history::LimitLevel::kFail) return;
  end_workflow_task_for_close();
  v1::HistoryEvent e;
  auto* a = e.mutable_workflow_execution_terminated();
  a->set_reason(history::describe_limit(size, config_.history_limits) + "; the execution was terminated");
  a->set_identity("reprise-server");
  append(std::move(e));
  close(v1::WORKFLOW_EXECUTION_STATUS_TERMINATED);
}

Result<Transition> MutableState::finish(history::EventBatchCodec& codec) {
  if (wake_pending_) wake_workflow();
  enforce_history_limits();
  Transition t;
  ExecutionWrite w;
  w.key = key_;
  w.expected_version = version_;
  w.status = state_.status();
  if (!builder_.empty()) {
    const int64_t first = builder_.events().front().event_id();
    const int64_t last = builder_.events().back().event_id();
    Result<std::string> data = codec.encode(builder_.events());
    if (!data) return data.status();
    w.events = HistoryBatch{first, last, std::move(*data)};
    history::HistorySize added;
    added.add(builder_.events());
    state_.set_history_events(state_.history_events() + added.events);
    state_.set_history_bytes(state_.history_bytes() + added.bytes);
  }
  w.state = state_.SerializeAsString();
  t.executions.push_back(std::move(w));
  if (claim_checks_) {
    // New events and the state (buffered events, heartbeat details) may hold
    // references; each keeps its blob alive for as long as this run exists.
    std::vector<history::Sha256Digest> digests;
    for (const auto& e : builder_.events()) REPRISE_RETURN_IF_ERROR(collect_claim_checks(e, digests));
    REPRISE_RETURN_IF_ERROR(collect_claim_checks(state_, digests));
    for (const auto& d : digests) t.add_blob_refs.push_back({d, key_});
  }
  t.add_tasks = std::move(tasks_);
  // Not written: each would only be deleted when it came due (a held
  // start's timeout, committed with the task's completion, say).
  std::erase_if(timers_, [this](const TimerRecord& timer) { return stale_already(timer); });
  t.add_timers = std::move(timers_);
  if (version_ == 0 || became_closed_) {
    VisibilityRecord v;
    v.key = key_;
    v.workflow_type = state_.workflow_type().name();
    v.task_queue = state_.task_queue().name();
    v.status = state_.status();
    v.start_time = to_time(state_.start_time());
    if (closed()) v.close_time = to_time(state_.close_time());
    t.visibility.push_back(std::move(v));
  }
  // Runs this transition creates commit with it: a started child, the run
  // this one continued as.
  auto merge = [&t, &codec](MutableState& run, std::string replaces, std::string request_id) -> Status {
    Result<Transition> created = run.finish(codec);
    if (!created) return created.status();
    for (auto& w : created->executions) t.executions.push_back(std::move(w));
    for (auto& task : created->add_tasks) t.add_tasks.push_back(std::move(task));
    for (auto& timer : created->add_timers) t.add_timers.push_back(std::move(timer));
    for (auto& v : created->visibility) t.visibility.push_back(std::move(v));
    // The new run's own references (its input): they keep the blobs alive
    // after this run is deleted.
    for (auto& r : created->add_blob_refs) t.add_blob_refs.push_back(std::move(r));
    const ExecutionKey& k = run.key();
    t.current_runs.push_back(
        {{k.namespace_id, k.workflow_id, k.run_id, v1::WORKFLOW_EXECUTION_STATUS_RUNNING, std::move(request_id)},
         std::move(replaces)});
    return Status::ok();
  };
  if (started_child_) REPRISE_RETURN_IF_ERROR(merge(*started_child_, started_child_replaces_, ""));
  if (continued_as_) {
    // This run closes and the next becomes the workflow id's current run.
    REPRISE_RETURN_IF_ERROR(merge(*continued_as_, key_.run_id, continued_as_->state().start_request_id()));
  } else if (became_closed_ && version_ != 0) {
    CurrentRun run{key_.namespace_id, key_.workflow_id, key_.run_id, state_.status(), state_.start_request_id()};
    t.current_runs.push_back({std::move(run), key_.run_id});
  }
  return t;
}

}  // namespace reprise::engine
