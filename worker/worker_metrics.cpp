#include "worker/worker_metrics.hpp"

namespace reprise::worker {

WorkerMetrics::WorkerMetrics(metrics::Registry* r, const std::string& task_queue) : task_queue_(task_queue) {
  if (r == nullptr) return;
  const std::string_view q = task_queue;
  metrics::GaugeFamily slots =
      r->gauges("reprise_worker_task_slots_used", "Task threads running a task, by worker type (workflow, activity).",
                {"task_queue", "worker_type"});
  workflow_slots_used = slots.with({q, "workflow"});
  activity_slots_used = slots.with({q, "activity"});
  sticky_cache_size =
      r->gauges("reprise_sticky_cache_size", "Workflow runs held in the worker's sticky cache.", {"task_queue"})
          .with({q});
  sticky_cache_hit = r->counters("reprise_sticky_cache_hit_total",
                                 "Workflow tasks served by the cached run, with no replay.", {"task_queue"})
                         .with({q});
  sticky_cache_miss =
      r->counters("reprise_sticky_cache_miss_total",
                  "Workflow tasks that found no usable cached run and replayed from the first event.", {"task_queue"})
          .with({q});
  replay_latency = r->histograms("reprise_workflow_task_replay_latency_seconds",
                                 "Time to replay a run's history from the first event (its count: the replays).",
                                 {"task_queue"}, metrics::latency_buckets())
                       .with({q});
  metrics::HistogramFamily polls =
      r->histograms("reprise_long_request_latency_seconds",
                    "Long-polls for tasks, from the request to its answer (a task or none), by operation.",
                    {"task_queue", "operation"}, metrics::latency_buckets());
  workflow_poll_latency = polls.with({q, "PollWorkflowTask"});
  activity_poll_latency = polls.with({q, "PollActivityTask"});
  activity_latency_ =
      r->histograms("reprise_activity_execution_latency_seconds", "Time an activity's code ran, by activity type.",
                    {"task_queue", "activity_type"}, metrics::latency_buckets());
  activity_failed_ = r->counters("reprise_activity_execution_failed_total",
                                 "Activity attempts whose code threw (cancellations aside), by activity type.",
                                 {"task_queue", "activity_type"});
}

void WorkerMetrics::activity_finished(std::string_view type, std::chrono::nanoseconds took, bool failed) const {
  activity_latency_.with({task_queue_, type}).observe(took);
  if (failed) activity_failed_.with({task_queue_, type}).inc();
}

}  // namespace reprise::worker
