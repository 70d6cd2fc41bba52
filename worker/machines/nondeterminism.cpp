#include "worker/machines/nondeterminism.hpp"

#include "history/event_builder.hpp"
#include "worker/machines/marker_machine.hpp"

namespace reprise::worker {

namespace {

// "(workflow id order-7)", with the run id and child-only when given.
std::string describe_target(const v1::WorkflowExecution& target, bool child_only) {
  std::string what = "(workflow id " + target.workflow_id();
  if (!target.run_id().empty()) what += ", run id " + target.run_id();
  if (child_only) what += ", child only";
  return what + ")";
}

std::string at_event(const v1::HistoryEvent& e) { return "event " + std::to_string(e.event_id()); }

}  // namespace

std::string describe(const v1::Command& c) {
  switch (c.attributes_case()) {
    case v1::Command::kScheduleActivityTask:
      return "ScheduleActivityTask '" + c.schedule_activity_task().activity_type().name() + "' (activity id " +
             c.schedule_activity_task().activity_id() + ")";
    case v1::Command::kRequestCancelActivityTask:
      return "RequestCancelActivityTask (scheduled event " +
             std::to_string(c.request_cancel_activity_task().scheduled_event_id()) + ")";
    case v1::Command::kStartTimer:
      return "StartTimer (timer id " + c.start_timer().timer_id() + ")";
    case v1::Command::kCancelTimer:
      return "CancelTimer (timer id " + c.cancel_timer().timer_id() + ")";
    case v1::Command::kStartChildWorkflowExecution:
      return "StartChildWorkflowExecution '" + c.start_child_workflow_execution().workflow_type().name() +
             "' (workflow id " + c.start_child_workflow_execution().workflow_id() + ")";
    case v1::Command::kSignalExternalWorkflowExecution: {
      const auto& a = c.signal_external_workflow_execution();
      return "SignalExternalWorkflowExecution '" + a.signal_name() + "' " +
             describe_target(a.execution(), a.child_workflow_only());
    }
    case v1::Command::kRequestCancelExternalWorkflowExecution: {
      const auto& a = c.request_cancel_external_workflow_execution();
      return "RequestCancelExternalWorkflowExecution " + describe_target(a.execution(), a.child_workflow_only());
    }
    case v1::Command::kRecordMarker:
      return "RecordMarker '" + c.record_marker().marker_name() + "' (id " + marker_id(c.record_marker().details()) +
             ")";
    case v1::Command::kCompleteWorkflowExecution:
      return "CompleteWorkflowExecution";
    case v1::Command::kFailWorkflowExecution:
      return "FailWorkflowExecution";
    case v1::Command::kCancelWorkflowExecution:
      return "CancelWorkflowExecution";
    case v1::Command::kContinueAsNewWorkflowExecution:
      return "ContinueAsNewWorkflowExecution";
    default:
      return v1::CommandType_Name(c.command_type());
  }
}

std::string describe(const v1::HistoryEvent& e) {
  std::string what = history::event_type_name(e.event_type());
  if (e.has_activity_task_scheduled()) {
    what += " '" + e.activity_task_scheduled().activity_type().name() + "' (activity id " +
            e.activity_task_scheduled().activity_id() + ")";
  } else if (e.has_timer_started()) {
    what += " (timer id " + e.timer_started().timer_id() + ")";
  } else if (e.has_timer_canceled()) {
    what += " (timer id " + e.timer_canceled().timer_id() + ")";
  } else if (e.has_activity_task_cancel_requested()) {
    what += " (scheduled event " + std::to_string(e.activity_task_cancel_requested().scheduled_event_id()) + ")";
  } else if (e.has_start_child_workflow_execution_initiated()) {
    what += " '" + e.start_child_workflow_execution_initiated().workflow_type().name() + "' (workflow id " +
            e.start_child_workflow_execution_initiated().workflow_id() + ")";
  } else if (e.has_signal_external_workflow_execution_initiated()) {
    const auto& a = e.signal_external_workflow_execution_initiated();
    what += " '" + a.signal_name() + "' " + describe_target(a.workflow_execution(), a.child_workflow_only());
  } else if (e.has_request_cancel_external_workflow_execution_initiated()) {
    const auto& a = e.request_cancel_external_workflow_execution_initiated();
    what += " " + describe_target(a.workflow_execution(), a.child_workflow_only());
  } else if (e.has_marker_recorded()) {
    what += " '" + e.marker_recorded().marker_name() + "' (id " + marker_id(e.marker_recorded().details()) + ")";
  }
  return what;
}

namespace nondeterminism {

NonDeterminism unrecorded_command(const v1::Command& c, std::string_view where) {
  return {"non-determinism: the workflow issued " + describe(c) + ", but history has no event for it " +
          std::string(where)};
}

NonDeterminism unissued_event(const v1::HistoryEvent& e) {
  return {"non-determinism: history has " + at_event(e) + " " + describe(e) +
          ", but the workflow code did nothing there now"};
}

NonDeterminism mismatch(const v1::HistoryEvent& e, const v1::Command& c) {
  return {"non-determinism at " + at_event(e) + ": history has " + describe(e) + ", the workflow code did " +
          describe(c) + " now"};
}

NonDeterminism unknown_owner(const v1::HistoryEvent& e, std::string_view what) {
  return {"non-determinism: history has " + at_event(e) + " " + describe(e) + " for " + std::string(what)};
}

NonDeterminism refused(const v1::HistoryEvent& e, std::string_view machine, std::string_view state) {
  return {"non-determinism: history has " + at_event(e) + " " + describe(e) + " for " + std::string(machine) + " (" +
          std::string(state) + "), which takes no such event"};
}

}  // namespace nondeterminism
}  // namespace reprise::worker
