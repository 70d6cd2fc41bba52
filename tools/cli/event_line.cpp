#include "tools/cli/event_line.hpp"

#include <cstdio>

#include "history/event_builder.hpp"
#include "reprise/detail/proto_time.hpp"
#include "tools/cli/json_payload.hpp"

namespace reprise::cli {

namespace {

// Payloads as compact JSON, cut short so a line stays a line.
std::string brief(const v1::Payloads& payloads) {
  std::string text = payloads_to_json(payloads).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  constexpr size_t kMax = 80;
  if (text.size() > kMax) text = text.substr(0, kMax) + "…";
  return text;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

std::string iso_time(const google::protobuf::Timestamp& t) {
  const time_t seconds = t.seconds();
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, t.nanos() / 1'000'000);
  return buf;
}

std::string details(const v1::HistoryEvent& e) {
  using E = v1::HistoryEvent;
  switch (e.attributes_case()) {
    case E::kWorkflowExecutionStarted: {
      const auto& a = e.workflow_execution_started();
      std::string line =
          quoted(a.workflow_type().name()) + " queue=" + a.task_queue().name() + " input=" + brief(a.input());
      if (a.attempt() > 1) line += " attempt " + std::to_string(a.attempt());
      if (to_nanos(a.first_workflow_task_backoff()).count() > 0) {
        line += " backoff " + std::to_string(to_nanos(a.first_workflow_task_backoff()).count() / 1'000'000) + " ms";
      }
      return line;
    }
    case E::kWorkflowExecutionCompleted:
      return "result=" + brief(e.workflow_execution_completed().result());
    case E::kWorkflowExecutionFailed: {
      const auto& a = e.workflow_execution_failed();
      return "failure=" + quoted(a.failure().message()) +
             (a.new_execution_run_id().empty() ? "" : " retried as run " + a.new_execution_run_id());
    }
    case E::kWorkflowExecutionTimedOut:
      return e.workflow_execution_timed_out().new_execution_run_id().empty()
                 ? ""
                 : "retried as run " + e.workflow_execution_timed_out().new_execution_run_id();
    case E::kWorkflowExecutionTerminated:
      return "reason=" + quoted(e.workflow_execution_terminated().reason());
    case E::kWorkflowExecutionContinuedAsNew:
      return "next run " + e.workflow_execution_continued_as_new().new_execution_run_id() +
             " input=" + brief(e.workflow_execution_continued_as_new().input());
    case E::kWorkflowTaskScheduled:
      return e.workflow_task_scheduled().attempt() > 1
                 ? "attempt " + std::to_string(e.workflow_task_scheduled().attempt())
                 : "";
    case E::kWorkflowTaskFailed:
      return quoted(e.workflow_task_failed().failure().message());
    case E::kActivityTaskScheduled: {
      const auto& a = e.activity_task_scheduled();
      return quoted(a.activity_type().name()) + " id=" + a.activity_id() + " input=" + brief(a.input());
    }
    case E::kActivityTaskStarted:
      return "attempt " + std::to_string(e.activity_task_started().attempt());
    case E::kActivityTaskCompleted:
      return "result=" + brief(e.activity_task_completed().result());
    case E::kActivityTaskFailed:
      return quoted(e.activity_task_failed().failure().message());
    case E::kActivityTaskTimedOut:
      return quoted(e.activity_task_timed_out().failure().message());
    case E::kTimerStarted:
      return "id=" + e.timer_started().timer_id() + " fires after " +
             std::to_string(to_nanos(e.timer_started().start_to_fire_timeout()).count() / 1'000'000) + " ms";
    case E::kTimerFired:
      return "id=" + e.timer_fired().timer_id();
    case E::kTimerCanceled:
      return "id=" + e.timer_canceled().timer_id();
    case E::kWorkflowExecutionSignaled:
      return quoted(e.workflow_execution_signaled().signal_name()) +
             " input=" + brief(e.workflow_execution_signaled().input());
    case E::kWorkflowExecutionCancelRequested:
      return "cause=" + quoted(e.workflow_execution_cancel_requested().cause());
    case E::kMarkerRecorded:
      return quoted(e.marker_recorded().marker_name());
    case E::kStartChildWorkflowExecutionInitiated:
      return quoted(e.start_child_workflow_execution_initiated().workflow_type().name()) +
             " id=" + e.start_child_workflow_execution_initiated().workflow_id();
    case E::kChildWorkflowExecutionCompleted:
      return "id=" + e.child_workflow_execution_completed().workflow_execution().workflow_id() +
             " result=" + brief(e.child_workflow_execution_completed().result());
    case E::kChildWorkflowExecutionFailed:
      return "id=" + e.child_workflow_execution_failed().workflow_execution().workflow_id() + " " +
             quoted(e.child_workflow_execution_failed().failure().message());
    default:
      return "";
  }
}

}  // namespace

std::string event_line(const v1::HistoryEvent& e) {
  char prefix[64];
  std::snprintf(prefix, sizeof prefix, "%4lld  ", static_cast<long long>(e.event_id()));
  std::string line = prefix + iso_time(e.event_time()) + "  " + history::event_type_name(e.event_type());
  const std::string d = details(e);
  if (!d.empty()) line += "  " + d;
  return line;
}

}  // namespace reprise::cli
