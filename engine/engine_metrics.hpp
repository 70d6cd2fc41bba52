// EngineMetrics: what the engine counts as it works, for reprise-server's
// /metrics (docs/operations.md, "Metrics"). Names follow Temporal's server
// metrics where one fits (workflow_success, task_schedule_to_start_latency,
// ...), with Prometheus' _total and _seconds suffixes.
//
// Without a registry (EngineOptions::metrics null: the server without
// --metrics-listen, the embedded engine, the simulator) every call does
// nothing beyond a null check.
//
// Thread safety: any thread; every call is a few relaxed atomic adds once
// its label set has been seen. Lifetime: the registry outlives the engine.
#pragma once

#include <chrono>
#include <string_view>
#include <vector>

#include "engine/store/records.hpp"
#include "reprise/internal/state.pb.h"
#include "reprise/metrics.hpp"

namespace reprise::engine {

class EngineMetrics {
 public:
  explicit EngineMetrics(metrics::Registry* registry);

  // What a transition about to be committed starts and closes: a new run
  // writes its visibility row as RUNNING, a closing one with its status.
  struct RunChanges {
    std::vector<std::pair<std::string, v1::WorkflowExecutionStatus>> runs;  // type, status
    bool empty() const { return runs.empty(); }
  };
  RunChanges run_changes(const Transition& t) const;
  // Counts them once their transition has committed.
  void committed(const RunChanges& changes) const;

  // A poll started the task `payload` of `kind` in `state`: what to count
  // of it (its schedule-to-start latency, a sticky hit), taken from the
  // transition and counted once the task is handed out, so that a
  // transition run again (the cache met another version) or refused counts
  // nothing twice.
  struct TaskStart {
    std::string_view type;  // "workflow" or "activity"
    bool sticky = false;
    std::chrono::nanoseconds waited{0};
  };
  TaskStart task_start(const internal::ExecutionState& state, TaskKind kind,
                       const internal::TaskPayload& payload) const;
  void task_started(const TaskStart& start) const;
  // The timer loop found `n` timers due.
  void timers_due(int64_t n) const;
  // A durable timer of `kind` (internal::TimerTask::Kind) applied, `lag`
  // after it was due.
  void timer_fired(int kind, std::chrono::nanoseconds lag) const;
  void retention_deleted(int64_t runs) const;

 private:
  bool on_;
  metrics::CounterFamily started_;
  metrics::CounterFamily closed_;
  metrics::HistogramFamily schedule_to_start_;
  metrics::CounterFamily sticky_hits_;
  metrics::Counter timers_due_;
  metrics::CounterFamily timers_fired_;
  metrics::Histogram timer_lag_;
  metrics::Counter retention_deleted_;
};

}  // namespace reprise::engine
