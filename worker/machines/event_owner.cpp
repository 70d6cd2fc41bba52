#include "worker/machines/event_owner.hpp"

namespace reprise::worker {

namespace {

constexpr const char* kUnknownActivity = "an activity the workflow code never scheduled";
constexpr const char* kUnknownChild = "a child the workflow code never started";
constexpr const char* kUnknownRequest = "a request the workflow code never sent";

MachineKey event_id(int64_t id) {
  MachineKey key;
  key.index = MachineKey::Index::kEventId;
  key.event_id = id;
  return key;
}

MachineKey timer(std::string_view timer_id) {
  MachineKey key;
  key.index = MachineKey::Index::kTimerId;
  key.timer_id = timer_id;
  return key;
}

EventOwner recorded_command(MachineKey key = {}) {
  EventOwner owner;
  owner.by_command_order = true;
  owner.key = key;
  return owner;
}

EventOwner recorded_close() {
  EventOwner owner;
  owner.by_command_order = true;
  owner.closes_run = true;
  return owner;
}

EventOwner outcome(MachineKey key, const char* unknown = EventOwner{}.unknown) {
  EventOwner owner;
  owner.key = key;
  owner.unknown = unknown;
  return owner;
}

EventOwner by_event_id(int64_t id, const char* unknown = EventOwner{}.unknown) {
  return outcome(event_id(id), unknown);
}

}  // namespace

EventOwner owner_of(const v1::HistoryEvent& e) {
  switch (e.attributes_case()) {
    // Recorded commands.
    case v1::HistoryEvent::kActivityTaskScheduled:
    case v1::HistoryEvent::kStartChildWorkflowExecutionInitiated:
    case v1::HistoryEvent::kSignalExternalWorkflowExecutionInitiated:
    case v1::HistoryEvent::kRequestCancelExternalWorkflowExecutionInitiated:
      return recorded_command(event_id(e.event_id()));
    case v1::HistoryEvent::kActivityTaskCancelRequested:
      return recorded_command(event_id(e.activity_task_cancel_requested().scheduled_event_id()));
    case v1::HistoryEvent::kTimerStarted:
      return recorded_command(timer(e.timer_started().timer_id()));
    case v1::HistoryEvent::kTimerCanceled:
      return recorded_command(timer(e.timer_canceled().timer_id()));
    case v1::HistoryEvent::kMarkerRecorded:
      return recorded_command();
    case v1::HistoryEvent::kWorkflowExecutionCompleted:
    case v1::HistoryEvent::kWorkflowExecutionFailed:
    case v1::HistoryEvent::kWorkflowExecutionCanceled:
    case v1::HistoryEvent::kWorkflowExecutionContinuedAsNew:
      return recorded_close();

    // Outcomes.
    case v1::HistoryEvent::kActivityTaskCompleted:
      return by_event_id(e.activity_task_completed().scheduled_event_id(), kUnknownActivity);
    case v1::HistoryEvent::kActivityTaskFailed:
      return by_event_id(e.activity_task_failed().scheduled_event_id(), kUnknownActivity);
    case v1::HistoryEvent::kActivityTaskTimedOut:
      return by_event_id(e.activity_task_timed_out().scheduled_event_id(), kUnknownActivity);
    case v1::HistoryEvent::kActivityTaskCanceled:
      return by_event_id(e.activity_task_canceled().scheduled_event_id(), kUnknownActivity);
    case v1::HistoryEvent::kTimerFired:
      return outcome(timer(e.timer_fired().timer_id()));
    case v1::HistoryEvent::kChildWorkflowExecutionStarted:
      return by_event_id(e.child_workflow_execution_started().initiated_event_id());
    case v1::HistoryEvent::kStartChildWorkflowExecutionFailed:
      return by_event_id(e.start_child_workflow_execution_failed().initiated_event_id(), kUnknownChild);
    case v1::HistoryEvent::kChildWorkflowExecutionCompleted:
      return by_event_id(e.child_workflow_execution_completed().initiated_event_id(), kUnknownChild);
    case v1::HistoryEvent::kChildWorkflowExecutionFailed:
      return by_event_id(e.child_workflow_execution_failed().initiated_event_id(), kUnknownChild);
    case v1::HistoryEvent::kChildWorkflowExecutionCanceled:
      return by_event_id(e.child_workflow_execution_canceled().initiated_event_id(), kUnknownChild);
    case v1::HistoryEvent::kChildWorkflowExecutionTimedOut:
      return by_event_id(e.child_workflow_execution_timed_out().initiated_event_id(), kUnknownChild);
    case v1::HistoryEvent::kChildWorkflowExecutionTerminated:
      return by_event_id(e.child_workflow_execution_terminated().initiated_event_id(), kUnknownChild);
    case v1::HistoryEvent::kExternalWorkflowExecutionSignaled:
      return by_event_id(e.external_workflow_execution_signaled().initiated_event_id(), kUnknownRequest);
    case v1::HistoryEvent::kSignalExternalWorkflowExecutionFailed:
      return by_event_id(e.signal_external_workflow_execution_failed().initiated_event_id(), kUnknownRequest);
    case v1::HistoryEvent::kExternalWorkflowExecutionCancelRequested:
      return by_event_id(e.external_workflow_execution_cancel_requested().initiated_event_id(), kUnknownRequest);
    case v1::HistoryEvent::kRequestCancelExternalWorkflowExecutionFailed:
      return by_event_id(e.request_cancel_external_workflow_execution_failed().initiated_event_id(), kUnknownRequest);

    default:
      return {};  // the workflow's own events; activity starts are not waited on
  }
}

}  // namespace reprise::worker
