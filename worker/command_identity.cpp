#include "worker/command_identity.hpp"

#include "reprise/codec.hpp"

namespace reprise::worker {

std::string marker_id(const google::protobuf::Map<std::string, v1::Payloads>& details) {
  auto it = details.find("id");
  if (it == details.end() || it->second.payloads_size() != 1) return "";
  try {
    return from_payload<std::string>(it->second.payloads(0), "a marker id");
  } catch (const PayloadError&) {
    return "";
  }
}

namespace {

std::string marker_identity(const std::string& name, const google::protobuf::Map<std::string, v1::Payloads>& details) {
  return "marker " + name + " " + marker_id(details);
}

// A signal or cancel request to another workflow: the target (and, for a
// signal, its name) make it; the value sent does not, as for activities.
std::string external_identity(const char* kind, const v1::WorkflowExecution& target, bool child_only,
                              const std::string& signal_name = "") {
  std::string id = std::string(kind) + " " + target.workflow_id() + " run=" + target.run_id();
  if (!signal_name.empty()) id += " " + signal_name;
  if (child_only) id += " child-only";
  return id;
}

}  // namespace

std::string identity_of(const v1::Command& c) {
  switch (c.attributes_case()) {
    case v1::Command::kScheduleActivityTask:
      return "activity " + c.schedule_activity_task().activity_id() + " " +
             c.schedule_activity_task().activity_type().name();
    case v1::Command::kRequestCancelActivityTask:
      return "cancel-activity " + std::to_string(c.request_cancel_activity_task().scheduled_event_id());
    case v1::Command::kStartTimer:
      return "timer " + c.start_timer().timer_id();
    case v1::Command::kCancelTimer:
      return "cancel-timer " + c.cancel_timer().timer_id();
    case v1::Command::kStartChildWorkflowExecution:
      return "child " + c.start_child_workflow_execution().workflow_id() + " " +
             c.start_child_workflow_execution().workflow_type().name();
    case v1::Command::kSignalExternalWorkflowExecution: {
      const auto& a = c.signal_external_workflow_execution();
      return external_identity("signal-external", a.execution(), a.child_workflow_only(), a.signal_name());
    }
    case v1::Command::kRequestCancelExternalWorkflowExecution: {
      const auto& a = c.request_cancel_external_workflow_execution();
      return external_identity("cancel-external", a.execution(), a.child_workflow_only());
    }
    case v1::Command::kRecordMarker:
      return marker_identity(c.record_marker().marker_name(), c.record_marker().details());
    case v1::Command::kCompleteWorkflowExecution:
      return "complete";
    case v1::Command::kFailWorkflowExecution:
      return "fail";
    case v1::Command::kCancelWorkflowExecution:
      return "cancel";
    case v1::Command::kContinueAsNewWorkflowExecution:
      return "continue-as-new";
    default:
      return v1::CommandType_Name(c.command_type());
  }
}

std::optional<std::string> identity_of(const v1::HistoryEvent& e) {
  switch (e.attributes_case()) {
    case v1::HistoryEvent::kActivityTaskScheduled:
      return "activity " + e.activity_task_scheduled().activity_id() + " " +
             e.activity_task_scheduled().activity_type().name();
    case v1::HistoryEvent::kActivityTaskCancelRequested:
      return "cancel-activity " + std::to_string(e.activity_task_cancel_requested().scheduled_event_id());
    case v1::HistoryEvent::kTimerStarted:
      return "timer " + e.timer_started().timer_id();
    case v1::HistoryEvent::kTimerCanceled:
      return "cancel-timer " + e.timer_canceled().timer_id();
    case v1::HistoryEvent::kStartChildWorkflowExecutionInitiated:
      return "child " + e.start_child_workflow_execution_initiated().workflow_id() + " " +
             e.start_child_workflow_execution_initiated().workflow_type().name();
    case v1::HistoryEvent::kSignalExternalWorkflowExecutionInitiated: {
      const auto& a = e.signal_external_workflow_execution_initiated();
      return external_identity("signal-external", a.workflow_execution(), a.child_workflow_only(), a.signal_name());
    }
    case v1::HistoryEvent::kRequestCancelExternalWorkflowExecutionInitiated: {
      const auto& a = e.request_cancel_external_workflow_execution_initiated();
      return external_identity("cancel-external", a.workflow_execution(), a.child_workflow_only());
    }
    case v1::HistoryEvent::kMarkerRecorded:
      return marker_identity(e.marker_recorded().marker_name(), e.marker_recorded().details());
    case v1::HistoryEvent::kWorkflowExecutionCompleted:
      return "complete";
    case v1::HistoryEvent::kWorkflowExecutionFailed:
      return "fail";
    case v1::HistoryEvent::kWorkflowExecutionCanceled:
      return "cancel";
    case v1::HistoryEvent::kWorkflowExecutionContinuedAsNew:
      return "continue-as-new";
    default:
      return std::nullopt;
  }
}

}  // namespace reprise::worker
