// WorkflowInstance, the command side: what the workflow's code asks of its
// context (detail::WorkflowCore), turned into commands and pending results.
#include <algorithm>

#include "history/proto_time.hpp"
#include "worker/command_identity.hpp"
#include "worker/workflow_instance.hpp"

namespace reprise::worker {

namespace {

v1::Command marker_command(const char* name, const std::string& id) {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_RECORD_MARKER);
  c.mutable_record_marker()->set_marker_name(name);
  *(*c.mutable_record_marker()->mutable_details())["id"].add_payloads() = to_payload(id);
  return c;
}

}  // namespace

std::shared_ptr<detail::Pending> WorkflowInstance::issue(v1::Command command, detail::Pending::Kind kind,
                                                         std::string name, bool cancellable) {
  auto pending = std::make_shared<detail::Pending>();
  pending->kind = kind;
  pending->name = std::move(name);
  pending->cancellable = cancellable;
  pending->core = this;
  if (cancellable && cancel_requested_) {
    // The workflow is being canceled: new cancellable work is canceled
    // before it starts, and no command is issued for it.
    resolve_canceled(pending);
    return pending;
  }
  issued_.push_back({std::move(command), pending});
  return pending;
}

std::shared_ptr<detail::Pending> WorkflowInstance::schedule_activity(v1::ScheduleActivityTaskCommandAttributes a,
                                                                     bool cancellable) {
  a.set_activity_id(std::to_string(++activity_seq_));
  std::string name = a.activity_type().name();
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK);
  *c.mutable_schedule_activity_task() = std::move(a);
  return issue(std::move(c), detail::Pending::Kind::kActivity, std::move(name), cancellable);
}

std::shared_ptr<detail::Pending> WorkflowInstance::start_timer(std::chrono::nanoseconds duration, bool cancellable) {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_START_TIMER);
  c.mutable_start_timer()->set_timer_id(std::to_string(++timer_seq_));
  set_duration(c.mutable_start_timer()->mutable_start_to_fire_timeout(), duration);
  std::string name = c.start_timer().timer_id();
  return issue(std::move(c), detail::Pending::Kind::kTimer, std::move(name), cancellable);
}

std::shared_ptr<detail::Pending> WorkflowInstance::start_child(v1::StartChildWorkflowExecutionCommandAttributes a,
                                                               bool cancellable) {
  ++child_seq_;
  const bool derived = a.workflow_id().empty();
  if (derived) {
    // Unique across the runs of this workflow id (the run id is) and the
    // same on replay.
    a.set_workflow_id(info_.workflow_id + "/" + a.workflow_type().name() + "-" + std::to_string(child_seq_) + "@" +
                      info_.run_id.substr(0, 8));
  }
  std::string name = a.workflow_id();
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION);
  *c.mutable_start_child_workflow_execution() = std::move(a);
  auto pending = issue(std::move(c), detail::Pending::Kind::kChild, std::move(name), cancellable);
  if (!issued_.empty() && issued_.back().pending == pending) issued_.back().derived_child_id = derived;
  return pending;
}

std::shared_ptr<detail::Pending> WorkflowInstance::signal_external(
    v1::SignalExternalWorkflowExecutionCommandAttributes a, bool cancellable) {
  std::string name = "signal '" + a.signal_name() + "' to workflow '" + a.execution().workflow_id() + "'";
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION);
  *c.mutable_signal_external_workflow_execution() = std::move(a);
  return issue(std::move(c), detail::Pending::Kind::kExternal, std::move(name), cancellable);
}

std::shared_ptr<detail::Pending> WorkflowInstance::cancel_external(
    v1::RequestCancelExternalWorkflowExecutionCommandAttributes a, bool cancellable) {
  std::string name = "cancel request to workflow '" + a.execution().workflow_id() + "'";
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION);
  *c.mutable_request_cancel_external_workflow_execution() = std::move(a);
  return issue(std::move(c), detail::Pending::Kind::kExternal, std::move(name), cancellable);
}

std::shared_ptr<detail::Pending> WorkflowInstance::next_signal(const std::string& name, bool cancellable) {
  std::shared_ptr<detail::Pending> pending = signals_.wait(name, this, cancellable);
  if (pending->ready) {
    pending->resolved_order = ++resolutions_;
  } else if (cancellable && cancel_requested_) {
    signals_.withdraw(pending);
    resolve_canceled(pending);
  }
  return pending;
}

void WorkflowInstance::cancel(const std::shared_ptr<detail::Pending>& pending) {
  if (pending->ready) return;
  // Issued in this activation and not yet in history: withdraw the command.
  auto unrecorded = std::find_if(issued_.begin(), issued_.end(), [&](const Issued& i) { return i.pending == pending; });
  if (unrecorded != issued_.end()) {
    issued_.erase(unrecorded);
    resolve_canceled(pending);
    return;
  }
  v1::Command c;
  switch (pending->kind) {
    case detail::Pending::Kind::kActivity:
      // Try-cancel: the future resolves now; the activity learns of it at
      // its next heartbeat, and its late outcome is ignored.
      c.set_command_type(v1::COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK);
      c.mutable_request_cancel_activity_task()->set_scheduled_event_id(pending->event_id);
      issued_.push_back({std::move(c), nullptr});
      break;
    case detail::Pending::Kind::kTimer:
      c.set_command_type(v1::COMMAND_TYPE_CANCEL_TIMER);
      c.mutable_cancel_timer()->set_timer_id(pending->name);
      issued_.push_back({std::move(c), nullptr});
      break;
    case detail::Pending::Kind::kSignal:
      signals_.withdraw(pending);
      break;
    case detail::Pending::Kind::kChild:
    case detail::Pending::Kind::kBranch:
      break;  // only the wait ends: the child's parent close policy covers the child
    case detail::Pending::Kind::kExternal:
      break;  // not reached: a recorded request has no cancel (ExternalFuture) and is delivered
  }
  resolve_canceled(pending);
}

void WorkflowInstance::deliver_cancel_request() {
  cancel_delivered_ = true;
  std::vector<std::shared_ptr<detail::Pending>> to_cancel;
  auto collect = [&](const auto& by_key) {
    for (const auto& [key, pending] : by_key) {
      if (pending->cancellable && !pending->ready) to_cancel.push_back(pending);
    }
  };
  collect(activities_);
  collect(timers_);
  collect(children_);
  for (const auto& pending : signals_.live_waits()) {
    if (pending->cancellable) to_cancel.push_back(pending);
  }
  // In the order history recorded them (signal waits, never recorded, last).
  std::stable_sort(to_cancel.begin(), to_cancel.end(), [](const auto& a, const auto& b) {
    return (a->event_id == 0 ? INT64_MAX : a->event_id) < (b->event_id == 0 ? INT64_MAX : b->event_id);
  });
  for (const auto& pending : to_cancel) cancel(pending);
}

void WorkflowInstance::resolve_canceled(const std::shared_ptr<detail::Pending>& pending) {
  pending->canceled = true;
  resolve(pending);
}

void WorkflowInstance::resolve(const std::shared_ptr<detail::Pending>& pending) {
  pending->ready = true;
  pending->resolved_order = ++resolutions_;
  for (std::coroutine_handle<> waiter : std::exchange(pending->waiters, {})) {
    // A coroutine waiting on several (any) is made ready once.
    if (std::find(ready_.begin(), ready_.end(), waiter) == ready_.end()) ready_.push_back(waiter);
  }
}

void WorkflowInstance::spawn(std::coroutine_handle<> branch) {
  branches_.push_back(branch);
  ready_.push_back(branch);
}

void WorkflowInstance::continue_as_new(v1::ContinueAsNewWorkflowExecutionCommandAttributes a) {
  if (continue_as_new_) return;  // another branch asked first
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION);
  *c.mutable_continue_as_new_workflow_execution() = std::move(a);
  continue_as_new_ = std::move(c);
}

v1::Payloads WorkflowInstance::side_effect(const std::function<v1::Payloads()>& compute) {
  const int64_t seq = ++side_effect_seq_;
  v1::Payloads value;
  auto recorded = recorded_side_effects_.find(seq);
  if (replaying_ && recorded != recorded_side_effects_.end()) {
    value = std::move(recorded->second);
  } else {
    value = compute();
  }
  if (recorded != recorded_side_effects_.end()) recorded_side_effects_.erase(recorded);
  v1::Command c = marker_command(kSideEffectMarker, std::to_string(seq));
  (*c.mutable_record_marker()->mutable_details())["data"] = value;
  issued_.push_back({std::move(c), nullptr});
  return value;
}

bool WorkflowInstance::patched(const std::string& id) {
  auto decided = patch_decisions_.find(id);
  if (decided != patch_decisions_.end()) return decided->second;
  const bool patched = !replaying_ || recorded_patches_.contains(id);
  if (patched) issued_.push_back({marker_command(kPatchMarker, id), nullptr});
  patch_decisions_[id] = patched;
  return patched;
}

}  // namespace reprise::worker
