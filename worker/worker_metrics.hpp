// What a Worker counts into WorkerOptions::metrics (docs/operations.md,
// "Metrics", the worker's): task slots in use, the sticky cache's size,
// hits and misses, replays and their time, activity latency and failures,
// and long-poll latency. Names follow the Temporal SDKs' (temporal_ ->
// reprise_); every series has the worker's task_queue label.
//
// Without a registry every handle is a no-op. Thread safety: any thread.
// Lifetime: the Worker owns it and holds the registry (a shared_ptr).
#pragma once

#include <string>
#include <string_view>

#include "reprise/metrics.hpp"

namespace reprise::worker {

struct WorkerMetrics {
  WorkerMetrics(metrics::Registry* registry, const std::string& task_queue);

  metrics::Gauge workflow_slots_used;
  metrics::Gauge activity_slots_used;
  metrics::Gauge sticky_cache_size;
  metrics::Counter sticky_cache_hit;
  metrics::Counter sticky_cache_miss;
  metrics::Histogram replay_latency;  // its count: the replays from the first event
  metrics::Histogram workflow_poll_latency;
  metrics::Histogram activity_poll_latency;

  void activity_finished(std::string_view type, std::chrono::nanoseconds took, bool failed) const;

 private:
  std::string task_queue_;
  metrics::HistogramFamily activity_latency_;
  metrics::CounterFamily activity_failed_;
};

}  // namespace reprise::worker
