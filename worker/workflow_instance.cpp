// WorkflowInstance, the replay side: applying history events, running
// activations, matching commands to their events. The commands the code
// issues are in workflow_commands.cpp.
#include "worker/workflow_instance.hpp"

#include <algorithm>

#include "history/enum_name.hpp"
#include "history/proto_time.hpp"
#include "reprise/detail/failure.hpp"
#include "worker/command_identity.hpp"
#include "worker/machines/nondeterminism.hpp"

namespace reprise::worker {

namespace {

// Exceptions that are how a workflow ends, as opposed to bugs in its code.
bool is_workflow_outcome(const std::exception& e) {
  return dynamic_cast<const ApplicationError*>(&e) != nullptr || dynamic_cast<const ActivityError*>(&e) != nullptr ||
         dynamic_cast<const ChildWorkflowError*>(&e) != nullptr ||
         dynamic_cast<const ExternalWorkflowError*>(&e) != nullptr || dynamic_cast<const CanceledError*>(&e) != nullptr;
}

}  // namespace

WorkflowInstance::WorkflowInstance(std::string workflow_type, std::shared_ptr<const WorkflowStarter> starter,
                                   PanicPolicy panic)
    : workflow_type_(std::move(workflow_type)), starter_(std::move(starter)), panic_(panic), context_(*this) {
  info_.workflow_type = workflow_type_;
}

uint64_t WorkflowInstance::next_random() {
  if (!random_) random_ = std::make_unique<std::mt19937_64>(random_seed_);
  return (*random_)();
}

size_t WorkflowInstance::approximate_bytes() const {
  // A map node, a Pending and its shared_ptr control block, about.
  constexpr size_t kPerPending = 256;
  size_t bytes = sizeof(*this) + static_cast<size_t>(std::max<int64_t>(0, frames_.bytes.load()));
  bytes += (activities_.size() + timers_.size() + children_.size() + externals_.size() + issued_.size()) * kPerPending;
  if (random_) bytes += sizeof(*random_);
  bytes += signals_.approximate_bytes(kPerPending);
  for (const auto& [seq, value] : recorded_side_effects_) bytes += value.ByteSizeLong();
  return bytes;
}

WorkflowInstance::~WorkflowInstance() {
  // Branch frames hold tasks and futures of the body's state: free them first.
  for (std::coroutine_handle<> branch : branches_) branch.destroy();
  body_.reset();
}

ApplyResult WorkflowInstance::apply(const v1::History& events) { return apply_events(events, true); }

ApplyResult WorkflowInstance::replay_completed(const v1::History& events) { return apply_events(events, false); }

Status WorkflowInstance::nondeterminism(NonDeterminism divergence) {
  diverged_ = true;
  return Status::failed_precondition(std::move(divergence.message));
}

ApplyResult WorkflowInstance::apply_events(const v1::History& events, bool run_last_task) {
  Activation out;
  Status applied = [&]() -> Status {
    note_markers(events);
    for (int i = 0; i < events.events_size(); ++i) {
      const v1::HistoryEvent& e = events.events(i);
      if (e.event_id() != last_event_id_ + 1) {
        return Status::invalid_argument("history continues at event " + std::to_string(e.event_id()) +
                                        ", the instance is at event " + std::to_string(last_event_id_));
      }
      last_event_id_ = e.event_id();
      if (e.event_type() != v1::EVENT_TYPE_WORKFLOW_TASK_STARTED) {
        REPRISE_RETURN_IF_ERROR(apply_event(e));
        continue;
      }
      // A task history shows completed was an activation: replay it. One that
      // failed or timed out left nothing behind: skip it. The last one is the
      // task at hand (unless only completed tasks are to run).
      const bool last = i + 1 == events.events_size();
      if (last && !run_last_task) continue;
      if (!last && events.events(i + 1).event_type() != v1::EVENT_TYPE_WORKFLOW_TASK_COMPLETED) continue;
      now_ = to_time(e.event_time());
      replaying_ = !last;
      info_.history_length = e.event_id();
      info_.history_size_bytes = e.workflow_task_started().history_size_bytes();
      info_.continue_as_new_suggested = e.workflow_task_started().suggest_continue_as_new();
      if (i > 0 && events.events(i - 1).has_workflow_task_scheduled()) {
        info_.attempt = events.events(i - 1).workflow_task_scheduled().attempt();
      }
      REPRISE_RETURN_IF_ERROR(activate());
      if (last) {
        for (const Issued& issued : issued_) out.commands.push_back(issued.command);
      }
    }
    // A history that ends after a completed task (an exported one) must hold
    // every command that task's code issued.
    const bool ends_in_task = events.events_size() > 0 && events.events(events.events_size() - 1).event_type() ==
                                                              v1::EVENT_TYPE_WORKFLOW_TASK_STARTED;
    if (!ends_in_task && !issued_.empty()) {
      return nondeterminism(nondeterminism::unrecorded_command(
          issued_.front().command, "(it ends at event " + std::to_string(last_event_id_) + ")"));
    }
    return Status::ok();
  }();
  if (applied.is_ok()) return out;
  if (diverged_) return NonDeterminism{applied.message()};
  return applied;
}

void WorkflowInstance::note_markers(const v1::History& events) {
  for (const v1::HistoryEvent& e : events.events()) {
    if (!e.has_marker_recorded()) continue;
    const auto& m = e.marker_recorded();
    auto id = m.details().find("id");
    if (id == m.details().end() || id->second.payloads_size() != 1) continue;
    try {
      const std::string key = from_payload<std::string>(id->second.payloads(0), "a marker id");
      if (m.marker_name() == kPatchMarker) {
        recorded_patches_.insert(key);
      } else if (m.marker_name() == kSideEffectMarker) {
        auto data = m.details().find("data");
        if (data != m.details().end()) recorded_side_effects_[std::stoll(key)] = data->second;
      }
    } catch (const std::exception&) {
      // A marker some other code recorded: matching reports it if it matters.
    }
  }
}

Status WorkflowInstance::activate() {
  if (!issued_.empty()) {
    return nondeterminism(nondeterminism::unrecorded_command(
        issued_.front().command, "before workflow task " + std::to_string(last_event_id_)));
  }
  if (completion_issued_) return Status::ok();  // a task after closing (rejected close): nothing runs
  detail::ChargeFramesTo charge(frames_);
  try {
    if (!started_) {
      started_ = true;
      body_ = (*starter_)(context_, input_, [this](const v1::Payload& p) { return load_payload(p); });
      v1::Payloads().Swap(&input_);  // decoded into the body's frame; not needed again
      ready_.push_back(body_->handle());
    }
    if (cancel_requested_ && !cancel_delivered_) deliver_cancel_request();
    while (!ready_.empty() && !continue_as_new_) {
      std::coroutine_handle<> next = ready_.front();
      ready_.pop_front();
      next.resume();
    }
    reap_finished_branches();
  } catch (const std::exception& e) {
    // Input that does not decode, a throwing helper the body did not catch:
    // a bug in a caller or the code, not a workflow outcome. The task fails
    // and is retried after a fix.
    return Status::internal(std::string("workflow '") + workflow_type_ + "' failed to run: " + e.what());
  }
  if (completion_issued_) return Status::ok();
  if (continue_as_new_) {
    completion_issued_ = true;
    issued_.push_back({std::move(*continue_as_new_), nullptr});
  } else if (body_->finished()) {
    return finish_workflow();
  }
  return Status::ok();
}

Status WorkflowInstance::finish_workflow() {
  completion_issued_ = true;
  v1::Command c;
  try {
    v1::Payloads result = body_->take_result();
    c.set_command_type(v1::COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION);
    *c.mutable_complete_workflow_execution()->mutable_result() = std::move(result);
  } catch (const CanceledError& e) {
    if (cancel_requested_) {
      c.set_command_type(v1::COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION);
      c.mutable_cancel_workflow_execution();
    } else {  // the code canceled its own work and let that escape: a failure like any other
      c.set_command_type(v1::COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION);
      *c.mutable_fail_workflow_execution()->mutable_failure() = reprise::detail::failure_of(e);
    }
  } catch (const std::exception& e) {
    if (!is_workflow_outcome(e) && panic_ == PanicPolicy::kFailTask) {
      completion_issued_ = false;
      return Status::internal(std::string("workflow '") + workflow_type_ + "' threw: " + e.what());
    }
    c.set_command_type(v1::COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION);
    *c.mutable_fail_workflow_execution()->mutable_failure() = reprise::detail::failure_of(e);
  }
  issued_.push_back({std::move(c), nullptr});
  return Status::ok();
}

void WorkflowInstance::reap_finished_branches() {
  std::erase_if(branches_, [](std::coroutine_handle<> branch) {
    if (!branch.done()) return false;
    branch.destroy();
    return true;
  });
}

Result<WorkflowInstance::Issued> WorkflowInstance::match(const v1::HistoryEvent& e) {
  const std::string recorded = *identity_of(e);
  auto same = [&](const Issued& issued) {
    if (issued.derived_child_id && e.has_start_child_workflow_execution_initiated()) {
      return issued.command.start_child_workflow_execution().workflow_type().name() ==
             e.start_child_workflow_execution_initiated().workflow_type().name();
    }
    return identity_of(issued.command) == recorded;
  };
  if (issued_.empty() || !same(issued_.front())) {
    if (issued_.empty()) return nondeterminism(nondeterminism::unissued_event(e));
    return nondeterminism(nondeterminism::mismatch(e, issued_.front().command));
  }
  Issued issued = std::move(issued_.front());
  issued_.pop_front();
  return issued;
}

Status WorkflowInstance::apply_event(const v1::HistoryEvent& e) {
  if (e.has_marker_recorded() && e.marker_recorded().marker_name() == kPatchMarker &&
      (issued_.empty() || identity_of(issued_.front().command) != *identity_of(e))) {
    return Status::ok();  // the patched() call is gone from the code: its marker asks nothing
  }
  if (identity_of(e)) {
    Result<Issued> m = match(e);
    if (!m) return m.status();
    if (m->pending) m->pending->event_id = e.event_id();
    switch (e.attributes_case()) {
      case v1::HistoryEvent::kActivityTaskScheduled:
        activities_[e.event_id()] = m->pending;
        break;
      case v1::HistoryEvent::kTimerStarted:
        timers_[e.timer_started().timer_id()] = m->pending;
        break;
      case v1::HistoryEvent::kTimerCanceled:
        timers_.erase(e.timer_canceled().timer_id());
        break;
      case v1::HistoryEvent::kStartChildWorkflowExecutionInitiated:
        children_[e.event_id()] = m->pending;
        break;
      case v1::HistoryEvent::kSignalExternalWorkflowExecutionInitiated:
      case v1::HistoryEvent::kRequestCancelExternalWorkflowExecutionInitiated:
        externals_[e.event_id()] = m->pending;
        break;
      case v1::HistoryEvent::kWorkflowExecutionCompleted:
      case v1::HistoryEvent::kWorkflowExecutionFailed:
      case v1::HistoryEvent::kWorkflowExecutionCanceled:
      case v1::HistoryEvent::kWorkflowExecutionContinuedAsNew:
        closed_ = true;
        break;
      default:
        break;
    }
    return Status::ok();
  }
  switch (e.attributes_case()) {
    case v1::HistoryEvent::kWorkflowExecutionStarted: {
      input_ = e.workflow_execution_started().input();
      now_ = to_time(e.event_time());
      // FNV-1a, not std::hash: the seed must be the same for every build.
      uint64_t seed = 14695981039346656037ull;
      for (unsigned char c : e.workflow_execution_started().original_execution_run_id()) {
        seed = (seed ^ c) * 1099511628211ull;
      }
      random_seed_ = seed;
      return Status::ok();
    }
    case v1::HistoryEvent::kActivityTaskCompleted:
    case v1::HistoryEvent::kActivityTaskFailed:
    case v1::HistoryEvent::kActivityTaskTimedOut:
    case v1::HistoryEvent::kActivityTaskCanceled:
      return apply_activity_outcome(e);
    case v1::HistoryEvent::kTimerFired: {
      auto it = timers_.find(e.timer_fired().timer_id());
      if (it == timers_.end()) break;
      resolve(it->second);
      timers_.erase(it);
      return Status::ok();
    }
    case v1::HistoryEvent::kChildWorkflowExecutionStarted: {
      auto it = children_.find(e.child_workflow_execution_started().initiated_event_id());
      if (it == children_.end()) break;
      return Status::ok();
    }
    case v1::HistoryEvent::kStartChildWorkflowExecutionFailed:
    case v1::HistoryEvent::kChildWorkflowExecutionCompleted:
    case v1::HistoryEvent::kChildWorkflowExecutionFailed:
    case v1::HistoryEvent::kChildWorkflowExecutionCanceled:
    case v1::HistoryEvent::kChildWorkflowExecutionTimedOut:
    case v1::HistoryEvent::kChildWorkflowExecutionTerminated:
      return apply_child_outcome(e);
    case v1::HistoryEvent::kExternalWorkflowExecutionSignaled:
    case v1::HistoryEvent::kSignalExternalWorkflowExecutionFailed:
    case v1::HistoryEvent::kExternalWorkflowExecutionCancelRequested:
    case v1::HistoryEvent::kRequestCancelExternalWorkflowExecutionFailed:
      return apply_external_outcome(e);
    case v1::HistoryEvent::kWorkflowExecutionSignaled: {
      const auto& signaled = e.workflow_execution_signaled();
      if (auto wait = signals_.deliver(signaled.signal_name(), e.event_id(), signaled.input())) resolve(wait);
      return Status::ok();
    }
    case v1::HistoryEvent::kWorkflowExecutionCancelRequested:
      cancel_requested_ = true;  // delivered to the code at the next activation
      return Status::ok();
    case v1::HistoryEvent::kWorkflowExecutionTerminated:
    case v1::HistoryEvent::kWorkflowExecutionTimedOut:
      closed_ = true;
      return Status::ok();
    default:
      return Status::ok();  // workflow-task bookkeeping, activity starts
  }
  return nondeterminism(nondeterminism::unknown_owner(e, "something the workflow code never started"));
}

Status WorkflowInstance::apply_activity_outcome(const v1::HistoryEvent& e) {
  int64_t scheduled = 0;
  v1::Failure failure;
  if (e.has_activity_task_completed()) {
    scheduled = e.activity_task_completed().scheduled_event_id();
  } else if (e.has_activity_task_failed()) {
    scheduled = e.activity_task_failed().scheduled_event_id();
    failure = e.activity_task_failed().failure();
  } else if (e.has_activity_task_timed_out()) {
    scheduled = e.activity_task_timed_out().scheduled_event_id();
    failure = e.activity_task_timed_out().failure();
  } else {
    scheduled = e.activity_task_canceled().scheduled_event_id();
  }
  auto it = activities_.find(scheduled);
  if (it == activities_.end()) {
    return nondeterminism(nondeterminism::unknown_owner(e, "an activity the workflow code never scheduled"));
  }
  std::shared_ptr<detail::Pending> pending = std::move(it->second);
  activities_.erase(it);
  if (pending->ready) return Status::ok();  // canceled by the code already: the late outcome changes nothing
  if (e.has_activity_task_completed()) {
    pending->result = e.activity_task_completed().result();
    resolve(pending);
  } else if (e.has_activity_task_canceled()) {
    resolve_canceled(pending);
  } else {
    pending->failure = std::move(failure);
    resolve(pending);
  }
  return Status::ok();
}

Status WorkflowInstance::apply_child_outcome(const v1::HistoryEvent& e) {
  int64_t initiated = 0;
  v1::Failure failure;
  failure.set_kind(v1::FAILURE_KIND_CHILD_WORKFLOW);
  if (e.has_start_child_workflow_execution_failed()) {
    initiated = e.start_child_workflow_execution_failed().initiated_event_id();
    switch (e.start_child_workflow_execution_failed().cause()) {
      case v1::EXTERNAL_FAILURE_CAUSE_ALREADY_EXISTS:
        failure.set_message("could not start: a workflow with its id is already running");
        break;
      case v1::EXTERNAL_FAILURE_CAUSE_REFUSED:
        failure.set_message("could not start: the server refused its attributes");
        break;
      default:
        failure.set_message("could not start");
        break;
    }
  } else if (e.has_child_workflow_execution_completed()) {
    initiated = e.child_workflow_execution_completed().initiated_event_id();
  } else if (e.has_child_workflow_execution_failed()) {
    initiated = e.child_workflow_execution_failed().initiated_event_id();
    const v1::Failure& cause = e.child_workflow_execution_failed().failure();
    failure.set_message("failed: " + cause.message());
    *failure.mutable_cause() = cause;
  } else if (e.has_child_workflow_execution_canceled()) {
    initiated = e.child_workflow_execution_canceled().initiated_event_id();
    failure.set_message("was canceled");
  } else if (e.has_child_workflow_execution_timed_out()) {
    initiated = e.child_workflow_execution_timed_out().initiated_event_id();
    failure.set_message("timed out");
  } else {
    initiated = e.child_workflow_execution_terminated().initiated_event_id();
    failure.set_message("was terminated");
  }
  auto it = children_.find(initiated);
  if (it == children_.end()) {
    return nondeterminism(nondeterminism::unknown_owner(e, "a child the workflow code never started"));
  }
  std::shared_ptr<detail::Pending> pending = std::move(it->second);
  children_.erase(it);
  if (pending->ready) return Status::ok();  // the wait was canceled
  if (e.has_child_workflow_execution_completed()) {
    pending->result = e.child_workflow_execution_completed().result();
  } else {
    pending->failure = std::move(failure);
  }
  resolve(pending);
  return Status::ok();
}

Status WorkflowInstance::apply_external_outcome(const v1::HistoryEvent& e) {
  int64_t initiated = 0;
  std::optional<v1::ExternalFailureCause> cause;
  if (e.has_external_workflow_execution_signaled()) {
    initiated = e.external_workflow_execution_signaled().initiated_event_id();
  } else if (e.has_external_workflow_execution_cancel_requested()) {
    initiated = e.external_workflow_execution_cancel_requested().initiated_event_id();
  } else if (e.has_signal_external_workflow_execution_failed()) {
    initiated = e.signal_external_workflow_execution_failed().initiated_event_id();
    cause = e.signal_external_workflow_execution_failed().cause();
  } else {
    initiated = e.request_cancel_external_workflow_execution_failed().initiated_event_id();
    cause = e.request_cancel_external_workflow_execution_failed().cause();
  }
  auto it = externals_.find(initiated);
  if (it == externals_.end()) {
    return nondeterminism(nondeterminism::unknown_owner(e, "a request the workflow code never sent"));
  }
  std::shared_ptr<detail::Pending> pending = std::move(it->second);
  externals_.erase(it);
  if (cause) {
    v1::Failure failure;
    failure.set_type(enum_name(*cause));
    std::string why;
    switch (*cause) {
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
    failure.set_message(pending->name + " failed: " + failure.type() + " (" + why + ")");
    pending->failure = std::move(failure);
  }
  resolve(pending);
  return Status::ok();
}

v1::Payload WorkflowInstance::load_payload(const v1::Payload& claim_check) {
  if (blobs_ == nullptr) {
    throw PayloadError("workflow '" + workflow_type_ + "' read a claim-check payload, and no blob store is connected");
  }
  return blobs_->resolve(claim_check);
}

Result<v1::Payloads> WorkflowInstance::query(const std::string& name) {
  if (!started_) {
    // No task has completed yet: run the first activation (as its pending
    // task will) so the handlers exist; its commands are not sent.
    replaying_ = true;
    issued_.clear();
    REPRISE_RETURN_IF_ERROR(activate());
  }
  auto it = query_handlers_.find(name);
  if (it == query_handlers_.end()) {
    std::string known;
    for (const auto& [handled, handler] : query_handlers_) known += (known.empty() ? "" : ", ") + handled;
    return Status::not_found("workflow '" + workflow_type_ + "' has no query '" + name +
                             "' (it answers: " + (known.empty() ? "none" : known) + ")");
  }
  try {
    return it->second();
  } catch (const std::exception& e) {
    return Status::internal("query '" + name + "' failed: " + e.what());
  }
}

}  // namespace reprise::worker
