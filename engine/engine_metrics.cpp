#include "engine/engine_metrics.hpp"

#include <array>

#include "reprise/detail/proto_time.hpp"

namespace reprise::engine {

namespace {

// internal::TimerTask::Kind by number.
constexpr std::array<std::string_view, 9> kTimerKinds = {
    "other",       "user_timer",          "workflow_task_timeout", "activity_timeout", "activity_retry",
    "run_timeout", "workflow_task_retry", "sticky_timeout",        "workflow_backoff"};
constexpr int kStickyTimeout = 7;

// The status label of a close: the suffix of Temporal's metric for it
// (workflow_success, workflow_failed, ...).
std::string_view close_status(v1::WorkflowExecutionStatus status) {
  switch (status) {
    case v1::WORKFLOW_EXECUTION_STATUS_COMPLETED:
      return "success";
    case v1::WORKFLOW_EXECUTION_STATUS_FAILED:
      return "failed";
    case v1::WORKFLOW_EXECUTION_STATUS_CANCELED:
      return "cancel";
    case v1::WORKFLOW_EXECUTION_STATUS_TERMINATED:
      return "terminate";
    case v1::WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
      return "timeout";
    case v1::WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
      return "continued_as_new";
    default:
      return "";
  }
}

}  // namespace

EngineMetrics::EngineMetrics(metrics::Registry* r) : on_(r != nullptr) {
  if (r == nullptr) return;
  started_ = r->counters("workflow_started_total", "Runs started (by a client, a parent, continue-as-new or a retry).",
                         {"workflow_type"});
  closed_ = r->counters("workflow_closed_total",
                        "Runs closed, by how: success, failed, cancel, terminate, timeout, continued_as_new.",
                        {"workflow_type", "status"});
  schedule_to_start_ = r->histograms("task_schedule_to_start_latency_seconds",
                                     "From a task's scheduling to a worker starting it, by task type "
                                     "(workflow, activity) and whether it came from a sticky queue.",
                                     {"task_type", "sticky"}, metrics::latency_buckets());
  sticky_hits_ = r->counters("workflow_task_sticky_total",
                             "Workflow tasks started: from the sticky queue of the worker that has the run cached "
                             "(outcome=hit), or moved to the normal queue because it did not start them in time "
                             "(outcome=fallback).",
                             {"outcome"});
  timers_due_ = r->counters("timer_due_total", "Durable timers the timer loop found due and launched.").with();
  timers_fired_ =
      r->counters("timer_fired_total", "Durable timers that fired and changed their run, by kind.", {"kind"});
  timer_lag_ = r->histograms("timer_fire_lag_seconds", "How late durable timers fired after they were due.", {},
                             metrics::latency_buckets())
                   .with();
  retention_deleted_ =
      r->counters("retention_deleted_runs_total", "Closed runs deleted by the retention sweeper.").with();
}

EngineMetrics::RunChanges EngineMetrics::run_changes(const Transition& t) const {
  RunChanges changes;
  if (!on_) return changes;
  for (const VisibilityRecord& v : t.visibility) changes.runs.emplace_back(v.workflow_type, v.status);
  return changes;
}

void EngineMetrics::committed(const RunChanges& changes) const {
  for (const auto& [type, status] : changes.runs) {
    if (status == v1::WORKFLOW_EXECUTION_STATUS_RUNNING) {
      started_.with({type}).inc();
    } else if (std::string_view how = close_status(status); !how.empty()) {
      closed_.with({type, how}).inc();
    }
  }
}

EngineMetrics::TaskStart EngineMetrics::task_start(const internal::ExecutionState& state, TaskKind kind,
                                                   const internal::TaskPayload& payload) const {
  TaskStart start{kind == TaskKind::kWorkflowTask ? "workflow" : "activity", payload.sticky()};
  if (kind == TaskKind::kWorkflowTask) {
    start.waited = to_time(state.workflow_task().started_time()) - to_time(state.workflow_task().scheduled_time());
  } else if (auto a = state.activities().find(payload.scheduled_event_id()); a != state.activities().end()) {
    start.waited = to_time(a->second.started_time()) - to_time(a->second.attempt_scheduled_time());
  }
  return start;
}

void EngineMetrics::task_started(const TaskStart& start) const {
  if (!on_) return;
  schedule_to_start_.with({start.type, start.sticky ? "true" : "false"}).observe(start.waited);
  if (start.sticky) sticky_hits_.with({"hit"}).inc();
}

void EngineMetrics::timers_due(int64_t n) const {
  if (n > 0) timers_due_.inc(n);
}

void EngineMetrics::timer_fired(int kind, std::chrono::nanoseconds lag) const {
  if (!on_) return;
  const size_t k = kind > 0 && kind < static_cast<int>(kTimerKinds.size()) ? static_cast<size_t>(kind) : 0;
  timers_fired_.with({kTimerKinds[k]}).inc();
  timer_lag_.observe(lag);
  if (kind == kStickyTimeout) sticky_hits_.with({"fallback"}).inc();
}

void EngineMetrics::retention_deleted(int64_t runs) const {
  if (runs > 0) retention_deleted_.inc(runs);
}

}  // namespace reprise::engine
