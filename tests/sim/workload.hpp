// What one simulated run is given: the workflows (their generated steps and
// how the client drives them), the workers' shapes and the faults' times.
// generate_workload() draws it from a seed on a random stream of its own,
// apart from the scheduler's; to_text() and parse_workload() write and read
// it as a small text file, so a case the simulator found is kept as the
// workload itself (tests/sim/cases/, `reprise-sim --replay-file F`) and is
// not moved by later changes to the generator (docs/testing.md,
// "Regression cases").
//
// The file, one item a line ('#' starts a comment):
//   faults-end <ms>
//   worker <workflow pollers> <activity pollers> <cache size> <page events> <eager slots>
//   engine-crash <at ms> between|before-commit|after-commit <countdown>
//   worker-crash <at ms> <worker index>
//   upgrade <at ms>   (all workers restarted with version 2 of the code; none: version 2 throughout)
//   disk-fault <kind> <at ms> <n>   (DiskFault: what n is depends on the kind)
//   workflow <id> [cancel] [signal-with-start] : <step> <step> ...
// A step is a name, with its numbers in parentheses:
//   activity(fails) timer(s) signal all+spawn(fails,s) any-race(fails,s) local(fails,s)
//   heartbeat(dies after,units) schedule-to-close
//   side-effect patch continue-as-new await-cancel
//   child(<id> <policy> <awaited|left-running> : <step> ...)
// where a child's policy is terminate, request-cancel or abandon, and
//   signal-parent(<parent id>) fail
// (what a left-running child starts with, and a failing workflow ends with).
//
// Thread safety: none (plain values).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "generated_workflow.hpp"
#include "history/status.hpp"
#include "scheduler.hpp"
#include "sim_worker.hpp"

namespace reprise::sim {

// A race's timer of an hour, which the activity must win (every workflow
// closes well within it); a shorter one either side may win.
inline constexpr int kRaceLongTimer = 3600;

struct WorkflowSpec {
  // How the run ends: completes; fails at its last step ("fail"); or waits
  // (await-cancel) for the client to cancel it (it runs its cleanup) or
  // to terminate it.
  enum class Ending { kComplete, kFail, kCancel, kTerminate };
  std::string id;
  std::vector<Step> steps;
  int signals = 0;                 // signal steps: the client sends exactly this many
  bool signal_with_start = false;  // the client starts it with SignalWithStart carrying signal 0
  Ending ending = Ending::kComplete;
  std::string parent;         // a child: started by this workflow, not by the client
  bool left_running = false;  // a child its parent does not await: it outlives its parent's run
  ChildWorkflowOptions::ParentClose parent_close = ChildWorkflowOptions::ParentClose::kTerminate;  // a child
};

struct EngineCrash {
  enum class Point { kBetweenJobs, kBeforeCommit, kAfterCommit };
  Duration at{0};
  Point point = Point::kBetweenJobs;
  int countdown = 1;  // before/after commit: the countdown-th next passage of the point
};

struct WorkerCrash {
  Duration at{0};
  int worker = 0;
};

// A fault of the disk under the engine's SQLite file (the simulated disk,
// tests/store/power_loss_vfs.hpp). `n` is, by kind:
//   full               every write fails with SQLITE_FULL for n ms, then there is room again
//   full-at-commit     the n-th next batch fails at COMMIT for want of room
//   fsync-fail         the next n syncs fail (a commit's, a checkpoint's)
//   slow               for n ms each commit takes 50 ms to 2 s of virtual time
//   power-loss         the machine loses power (what was not synced is gone,
//                      then the engine restarts): at once (n unused)
//   power-loss-before-commit / -after-commit   at the n-th next passage of that point
//   power-loss-mid-write   at the n-th next write, truncation or sync (inside a
//                      commit or a checkpoint)
struct DiskFault {
  enum class Kind {
    kFull,
    kFullAtCommit,
    kFsyncFail,
    kSlow,
    kPowerLoss,
    kPowerLossBeforeCommit,
    kPowerLossAfterCommit,
    kPowerLossMidWrite,
    // The store commits a batch and its answer is lost (PostgreSQL's
    // connection dropped at COMMIT): each transition in it fails
    // UNAVAILABLE, "may have committed", and the process goes on.
    kCommitAnswerLost
  };
  Kind kind = Kind::kFull;
  Duration at{0};
  int n = 1;
};
const char* disk_fault_name(DiskFault::Kind kind);

struct Workload {
  std::vector<WorkflowSpec> workflows;  // top level only; children() derives the rest
  std::vector<SimWorker::Shape> workers;
  Duration faults_end{0};
  std::vector<EngineCrash> engine_crashes;
  std::vector<WorkerCrash> worker_crashes;
  // When every worker is restarted with version 2 of the code (patch
  // steps); until then they run version 1. Zero: version 2 throughout.
  Duration upgrade_at{0};
  std::vector<DiskFault> disk_faults;
};

Workload generate_workload(uint64_t seed);
std::string to_text(const Workload& workload);
Result<Workload> parse_workload(const std::string& text);

// The children a workflow's steps start (and theirs), in the order of the
// steps, each with its parent and how its parent starts it.
std::vector<WorkflowSpec> children(const WorkflowSpec& parent);

// What the report counts a step as (SimResult::kinds), and its name in the file.
const char* kind_name(StepKind kind);

}  // namespace reprise::sim
