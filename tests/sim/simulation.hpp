// One seeded run of the simulator: a real Engine on a real SqliteStore file,
// driven through EngineRuntime and the store's stepped writer by the
// Scheduler; clients and workers that reach it only through a simulated
// network (delay, drop, duplicate, reorder, time out); engine crashes at the
// store's exact before/after-commit points and between jobs; a generated
// workload with a reference model of each workflow's outcome; and the
// invariants checked against what the engine recorded.
//
// Thread safety: none; one Simulation per thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "workload.hpp"

namespace reprise::sim {

struct SimOptions {
  uint64_t seed = 1;                 // the scheduler's; and the workload's unless given
  std::optional<Workload> workload;  // a recorded one (--replay-file) instead of the seed's
  std::string db_dir;                // a directory for this run's database file
  bool verbose = false;
  bool trace = false;  // every job and note on stderr
};

struct SimResult {
  bool ok = true;
  std::vector<std::string> failures;  // invariants that did not hold
  std::vector<std::string> trace;     // the last jobs before the end
  uint64_t trace_hash = 0;
  uint64_t steps = 0;
  int workflows = 0;                 // children included
  std::map<std::string, int> kinds;  // generated steps by kind, and workflows by how the client drives them
  int engine_crashes = 0;
  int worker_crashes = 0;
  int queries_answered = 0;        // by the workers' real query path
  int closed_queries_refused = 0;  // of runs already closed, refused as the model says
  int eager_activities = 0;        // started by the engine in a workflow task's answer
  double virtual_seconds = 0;
};

SimResult run_simulation(const SimOptions& options);

}  // namespace reprise::sim
