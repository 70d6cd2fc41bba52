#include "engine/server/server_metrics.hpp"

#include <sys/stat.h>

#include <vector>

namespace reprise::engine {

namespace {

int64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

std::vector<double> batch_size_bounds() {
  // WriterStats::batch_sizes: 1, 2-3, 4-7, ..., 128-255, then 256 and more.
  std::vector<double> bounds;
  for (int i = 0; i + 1 < kBatchSizeBuckets; ++i) bounds.push_back(static_cast<double>((2 << i) - 1));
  return bounds;
}

}  // namespace

void add_server_metrics(metrics::Registry& r, Engine& engine, BlobStore& blobs, const std::string& db_path) {
  metrics::GaugeFamily backlog =
      r.gauges("approximate_backlog_count", "Tasks waiting for a worker, by task queue and task type.",
               {"task_queue", "task_type"});
  metrics::GaugeFamily parked = r.gauges(
      "parked_polls", "Worker long-polls waiting for a task, by task queue and type.", {"task_queue", "task_type"});
  metrics::Gauge pending_requests =
      r.gauges("service_pending_requests", "Requests that change a workflow, admitted and not yet answered.").with();
  metrics::Gauge pending_queries = r.gauges("service_pending_queries", "Queries waiting for a worker's answer.").with();
  metrics::Gauge history_waits =
      r.gauges("parked_history_waits", "GetHistory long-polls waiting for a new event.").with();
  metrics::Gauge live_nodes =
      r.gauges("cluster_live_nodes",
               "Nodes of the cluster this node saw live at its last lease round, itself included (0: no cluster).")
          .with();

  metrics::Counter transitions = r.counters("persistence_transitions_total", "Workflow transitions committed.").with();
  metrics::Histogram batch_size =
      r.histograms("persistence_commit_batch_size", "Writes per SQLite transaction of the group commit.", {},
                   batch_size_bounds())
          .with();
  metrics::Histogram commit_latency =
      r.histograms("persistence_commit_latency_seconds",
                   "Time of each group-commit transaction, BEGIN to COMMIT (the WAL sync included).", {},
                   {kCommitSecondsBounds.begin(), kCommitSecondsBounds.end()})
          .with();
  metrics::CounterFamily syncs =
      r.counters("persistence_fsync_total", "fsync/fdatasync calls, by file (wal, database).", {"file"});
  metrics::Counter sync_time =
      r.counters("persistence_fsync_microseconds_total", "Time spent in fsync/fdatasync, all files, in microseconds.")
          .with();
  metrics::CounterFamily checkpoints = r.counters(
      "persistence_checkpoints_total", "WAL checkpoints, by kind (passive, restart, writer, failed).", {"kind"});
  metrics::GaugeFamily file_bytes =
      r.gauges("persistence_file_size_bytes", "Size of the database's files, by file (database, wal).", {"file"});

  metrics::Gauge cache_entries =
      r.gauges("execution_cache_entries", "Execution records kept in memory (EngineOptions::execution_cache_entries).")
          .with();
  metrics::Gauge cache_bytes =
      r.gauges("execution_cache_bytes", "Bytes of state and history those records keep.").with();
  metrics::CounterFamily cache_reads =
      r.counters("execution_cache_reads_total",
                 "Reads of an execution's record (state) or recent history (history), by whether the cache answered "
                 "(hit) or the store did (miss).",
                 {"read", "result"});

  metrics::Gauge blob_count =
      r.gauges("persistence_blobs", "Claim-check blobs stored (complete uploads), referenced or not yet collected.")
          .with();
  metrics::Gauge blob_bytes = r.gauges("persistence_blob_bytes", "The bytes of those blobs.").with();

  r.on_scrape([=, &engine, &blobs] {
    backlog.zero_all();
    parked.zero_all();
    for (const QueueLoad& q : engine.queue_loads()) {
      const std::string_view type = q.key.kind == TaskKind::kWorkflowTask ? "workflow" : "activity";
      backlog.with({q.key.queue, type}).add(static_cast<double>(q.tasks));
      parked.with({q.key.queue, type}).add(static_cast<double>(q.parked_polls));
    }
    pending_requests.set(static_cast<double>(engine.pending_requests()));
    pending_queries.set(static_cast<double>(engine.pending_queries()));
    history_waits.set(static_cast<double>(engine.parked_history_waits()));
    live_nodes.set(static_cast<double>(engine.cluster_live_nodes()));

    const StorageStats s = engine.storage_stats();
    transitions.set_total(s.writes.transitions);
    batch_size.set_counts(s.writes.batch_sizes, static_cast<double>(s.writes.transitions + s.writes.jobs));
    commit_latency.set_counts(s.writes.commit_times, std::chrono::duration<double>(s.writes.commit_time).count());
    syncs.with({"wal"}).set_total(s.wal_syncs);
    syncs.with({"database"}).set_total(s.database_syncs);
    sync_time.set_total(std::chrono::duration_cast<std::chrono::microseconds>(s.sync_time).count());
    checkpoints.with({"passive"}).set_total(s.checkpoints.passive);
    checkpoints.with({"restart"}).set_total(s.checkpoints.restarts);
    checkpoints.with({"writer"}).set_total(s.checkpoints.by_writer);
    checkpoints.with({"failed"}).set_total(s.checkpoints.failed);
    file_bytes.with({"database"}).set(static_cast<double>(file_size(db_path)));
    file_bytes.with({"wal"}).set(static_cast<double>(file_size(db_path + "-wal")));
    const ExecutionCache::Stats cache = engine.execution_cache_stats();
    cache_entries.set(static_cast<double>(cache.entries));
    cache_bytes.set(static_cast<double>(cache.bytes));
    cache_reads.with({"state", "hit"}).set_total(cache.hits);
    cache_reads.with({"state", "miss"}).set_total(cache.misses);
    cache_reads.with({"history", "hit"}).set_total(cache.history_hits);
    cache_reads.with({"history", "miss"}).set_total(cache.history_misses);
    if (Result<BlobTotals> stored = blobs.totals()) {
      blob_count.set(static_cast<double>(stored->blobs));
      blob_bytes.set(static_cast<double>(stored->bytes));
    }
  });
}

}  // namespace reprise::engine
