// What the server's store did for a measured phase of a benchmark: the
// difference of GetStorageStats before and after it, per workflow.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "reprise/v1/service.grpc.pb.h"

namespace reprise::bench {

// The server's counts now; all zero if it did not answer.
inline v1::GetStorageStatsResponse storage_stats(v1::WorkflowService::Stub& stub) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::GetStorageStatsResponse stats;
  if (!stub.GetStorageStats(&context, v1::GetStorageStatsRequest(), &stats).ok()) stats.Clear();
  return stats;
}

// One line: transitions, commits (each one WAL sync) and syncs of any kind
// per workflow, the mean batch and the checkpoints, between two readings;
// the WAL's size now and its largest since the server started; then the
// commits by batch size (1, 2-3, 4-7, ...).
inline std::string per_workflow(const v1::GetStorageStatsResponse& before, const v1::GetStorageStatsResponse& after,
                                int64_t workflows) {
  const double n = workflows > 0 ? static_cast<double>(workflows) : 1.0;
  const int64_t transitions = after.transitions() - before.transitions();
  const int64_t writes = transitions + after.jobs() - before.jobs();
  const int64_t commits = after.commits() - before.commits();
  const int64_t wal_syncs = after.wal_syncs() - before.wal_syncs();
  const int64_t db_syncs = after.database_syncs() - before.database_syncs();
  const int64_t checkpoints = after.passive_checkpoints() + after.restart_checkpoints() - before.passive_checkpoints() -
                              before.restart_checkpoints();
  char line[320];
  std::snprintf(line, sizeof line,
                "per workflow: %.2f transitions, %.2f commits, %.2f syncs (WAL %.2f, db %.2f); mean batch %.1f; "
                "%lld checkpoints (%lld restarts); WAL %lld pages, at most %lld",
                static_cast<double>(transitions) / n, static_cast<double>(commits) / n,
                static_cast<double>(wal_syncs + db_syncs) / n, static_cast<double>(wal_syncs) / n,
                static_cast<double>(db_syncs) / n, commits > 0 ? static_cast<double>(writes) / commits : 0.0,
                static_cast<long long>(checkpoints),
                static_cast<long long>(after.restart_checkpoints() - before.restart_checkpoints()),
                static_cast<long long>(after.wal_pages()), static_cast<long long>(after.largest_wal_pages()));
  std::string out = line;
  out += "; batches of 1, 2-3, 4-7, ...:";
  for (int i = 0; i < after.batch_sizes_size(); ++i) {
    const int64_t was = i < before.batch_sizes_size() ? before.batch_sizes(i) : 0;
    out += " " + std::to_string(after.batch_sizes(i) - was);
  }
  return out;
}

}  // namespace reprise::bench
