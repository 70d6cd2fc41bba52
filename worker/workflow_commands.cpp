// WorkflowInstance, the command side: what the workflow's code asks of its
// context (detail::WorkflowCore), turned into commands and pending results.
#include <algorithm>

#include "reprise/detail/proto_time.hpp"
#include "worker/machines/activity_machine.hpp"
#include "worker/machines/child_machine.hpp"
#include "worker/machines/external_machine.hpp"
#include "worker/machines/local_activity_machine.hpp"
#include "worker/machines/marker_machine.hpp"
#include "worker/machines/timer_machine.hpp"
#include "worker/workflow_instance.hpp"

namespace reprise::worker {

std::pair<std::shared_ptr<detail::Pending>, bool> WorkflowInstance::new_pending(detail::Pending::Kind kind,
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
    return {std::move(pending), false};
  }
  return {std::move(pending), true};
}

std::shared_ptr<detail::Pending> WorkflowInstance::schedule_activity(v1::ScheduleActivityTaskCommandAttributes a,
                                                                     bool cancellable) {
  a.set_activity_id(std::to_string(++activity_seq_));
  auto [pending, issue] = new_pending(detail::Pending::Kind::kActivity, a.activity_type().name(), cancellable);
  if (!issue) return pending;
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK);
  *c.mutable_schedule_activity_task() = std::move(a);
  commands_.push_back(std::make_shared<ActivityMachine>(std::move(c), pending));
  return pending;
}

std::shared_ptr<detail::Pending> WorkflowInstance::schedule_local_activity(v1::ScheduleActivityTaskCommandAttributes a,
                                                                           bool cancellable) {
  const int64_t seq = ++local_activity_seq_;
  auto [pending, issue] = new_pending(detail::Pending::Kind::kActivity, a.activity_type().name(), cancellable);
  if (!issue) return pending;
  // No command yet: the worker runs it after this activation (or replay
  // finds its marker), and its marker is the command.
  local_activities_.push_back(std::make_shared<LocalActivityMachine>(seq, std::move(a), pending));
  return pending;
}

std::shared_ptr<detail::Pending> WorkflowInstance::start_timer(std::chrono::nanoseconds duration, bool cancellable) {
  auto [pending, issue] = new_pending(detail::Pending::Kind::kTimer, std::to_string(++timer_seq_), cancellable);
  if (!issue) return pending;
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_START_TIMER);
  c.mutable_start_timer()->set_timer_id(pending->name);
  set_duration(c.mutable_start_timer()->mutable_start_to_fire_timeout(), duration);
  commands_.push_back(std::make_shared<TimerMachine>(std::move(c), pending));
  return pending;
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
  auto [pending, issue] = new_pending(detail::Pending::Kind::kChild, a.workflow_id(), cancellable);
  if (!issue) return pending;
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION);
  *c.mutable_start_child_workflow_execution() = std::move(a);
  commands_.push_back(std::make_shared<ChildMachine>(std::move(c), pending, derived));
  return pending;
}

std::shared_ptr<detail::Pending> WorkflowInstance::signal_external(
    v1::SignalExternalWorkflowExecutionCommandAttributes a, bool cancellable) {
  auto [pending, issue] =
      new_pending(detail::Pending::Kind::kExternal,
                  "signal '" + a.signal_name() + "' to workflow '" + a.execution().workflow_id() + "'", cancellable);
  if (!issue) return pending;
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION);
  *c.mutable_signal_external_workflow_execution() = std::move(a);
  commands_.push_back(std::make_shared<ExternalMachine>(std::move(c), pending));
  return pending;
}

std::shared_ptr<detail::Pending> WorkflowInstance::cancel_external(
    v1::RequestCancelExternalWorkflowExecutionCommandAttributes a, bool cancellable) {
  auto [pending, issue] = new_pending(detail::Pending::Kind::kExternal,
                                      "cancel request to workflow '" + a.execution().workflow_id() + "'", cancellable);
  if (!issue) return pending;
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION);
  *c.mutable_request_cancel_external_workflow_execution() = std::move(a);
  commands_.push_back(std::make_shared<ExternalMachine>(std::move(c), pending));
  return pending;
}

std::shared_ptr<detail::Pending> WorkflowInstance::next_signal(const std::string& name, bool cancellable) {
  std::shared_ptr<detail::Pending> pending = signals_->wait(name, this, cancellable);
  if (pending->ready) {
    pending->resolved_order = ++resolutions_;
  } else if (cancellable && cancel_requested_) {
    signals_->withdraw(pending);
    resolve_canceled(pending);
  }
  return pending;
}

void WorkflowInstance::cancel(const std::shared_ptr<detail::Pending>& pending) {
  if (pending->ready) return;
  // A local activity still running: it is forgotten (no marker) and a run
  // in flight finishes unread. Replay cancels it at the same point.
  auto local = std::find_if(local_activities_.begin(), local_activities_.end(),
                            [&](const auto& machine) { return machine->pending() == pending; });
  if (local != local_activities_.end()) {
    local_activities_.erase(local);
    resolve_canceled(pending);
    return;
  }
  // Issued in this activation and not yet in history.
  auto unrecorded = std::find_if(commands_.begin(), commands_.end(),
                                 [&](const auto& machine) { return machine->pending() == pending; });
  if (unrecorded != commands_.end()) {
    // Only a FutureMachine has a future.
    if (static_cast<FutureMachine&>(**unrecorded).cancel(*this) == CancelEffect::kWithdrawCommand) {
      commands_.erase(unrecorded);
    }
    return;
  }
  if (std::shared_ptr<FutureMachine> recorded = recorded_machine(pending)) {
    if (recorded->cancel(*this) == CancelEffect::kIssueCommand) commands_.push_back(std::move(recorded));
    return;
  }
  // A signal wait or a branch: no command, only the wait.
  if (pending->kind == detail::Pending::Kind::kSignal) signals_->withdraw(pending);
  resolve_canceled(pending);
}

void WorkflowInstance::deliver_cancel_request() {
  cancel_delivered_ = true;
  std::vector<std::shared_ptr<detail::Pending>> to_cancel;
  auto collect = [&](const auto& by_key) {
    for (const auto& [key, machine] : by_key) {
      if (machine->pending()->cancellable && !machine->pending()->ready) to_cancel.push_back(machine->pending());
    }
  };
  collect(by_event_id_);
  collect(timers_);
  for (const auto& pending : signals_->live_waits()) {
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
  auto recorded = recorded_markers_.side_effects.find(seq);
  if (replaying_ && recorded != recorded_markers_.side_effects.end()) {
    value = std::move(recorded->second);
  } else {
    value = compute();
  }
  if (recorded != recorded_markers_.side_effects.end()) recorded_markers_.side_effects.erase(recorded);
  v1::Command c = marker_command(kSideEffectMarker, std::to_string(seq));
  (*c.mutable_record_marker()->mutable_details())["data"] = value;
  commands_.push_back(std::make_shared<MarkerMachine>(std::move(c)));
  return value;
}

bool WorkflowInstance::patched(const std::string& id) {
  auto decided = patch_decisions_.find(id);
  if (decided != patch_decisions_.end()) return decided->second;
  const bool patched = !replaying_ || recorded_markers_.patches.contains(id);
  if (patched) commands_.push_back(std::make_shared<MarkerMachine>(marker_command(kPatchMarker, id)));
  patch_decisions_[id] = patched;
  return patched;
}

}  // namespace reprise::worker
