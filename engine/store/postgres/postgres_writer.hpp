// PgTransitionWriter: the PostgreSQL store's writer thread, with group
// commit.
//
// Callers queue transitions; the thread takes up to `max_batch` of them into
// one PostgreSQL transaction, commits once, and only then acknowledges them.
// Every condition of a transition (execution version and next event id, the
// current run it replaces, the tasks and timers it takes, the blobs it
// references) is a plain statement whose row count says whether it held —
// `UPDATE ... WHERE version = $n` — so the SQL runs unchanged on
// PostgreSQL-compatible distributed databases; no advisory lock, no
// LISTEN/NOTIFY. A transition whose condition fails writes nothing and fails
// alone; a failed COMMIT fails the whole batch.
//
// Two shapes of a batch (PgCommitShape), measured in docs/storage.md:
// - kSavepoints: each transition in its own SAVEPOINT, every statement a
//   round trip; a failed condition rolls back to its savepoint.
// - kPipelined: every statement of the batch sent at once (libpq's pipeline
//   mode, one round trip), no savepoints; if any condition failed, the
//   transaction is rolled back and the batch is run again as kSavepoints, so
//   the failure stays its transition's alone.
//
// A batch that meets a full disk (SQLSTATE 53100, disk_full: a data file
// could not be extended) is not failed, as on SQLite (transition_writer.hpp):
// it is narrowed to its first half, down to one write, and a single write
// the disk has no room for waits and is tried again, backing off from 100 ms
// to 10 s, until it goes through or the store closes. Everything queued
// waits with it; problem() says why (write_stall.hpp).
//
// Fencing (docs/cluster.md): with shard leases, every transition ends with
// `SELECT 1 FROM shards WHERE shard_id = $s AND owner = $me AND range_id =
// $held FOR UPDATE` for each shard it writes, whose row must come back. The
// row lock holds until COMMIT, so a node that takes the shard over (which
// bumps range_id) either waits for this batch or makes it fail: a node that
// lost a shard never writes to it again. A task or timer removed by id
// returns its shard, fenced the same way if nothing else of the transition
// was in it. A transition whose shard this node does not serve fails
// before it reaches the database, UNAVAILABLE, naming the owner.
//
// Thread safety: submit() from any thread; callbacks run on the writer
// thread and must not block.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "engine/store/postgres/pg_connection.hpp"
#include "engine/store/postgres/pg_shard_leases.hpp"
#include "engine/store/records.hpp"
#include "engine/store/storage_stats.hpp"
#include "engine/store/store.hpp"
#include "engine/store/transition_writer.hpp"
#include "engine/store/write_stall.hpp"
#include "reprise/clock.hpp"

namespace reprise::engine {

enum class PgCommitShape { kSavepoints, kPipelined };

class PgTransitionWriter {
 public:
  // `leases`: the shards this node holds (nullptr: no fencing); outlives
  // the writer.
  PgTransitionWriter(std::unique_ptr<PgConnection> db, int shard_count, int max_batch, PgCommitShape shape,
                     FaultHook fault_hook, const Clock& clock, const PgShardLeases* leases,
                     StallReport report = nullptr);
  // Commits or fails everything queued, then stops the thread.
  ~PgTransitionWriter();

  void submit(Transition transition, CommitCallback done);
  WriterStats stats() const;
  // Writes queued and not yet taken into a batch.
  size_t queued() const;
  // "" while writes go through; otherwise why they wait, and since when.
  std::string problem() const;
  // A batch waiting for room fails now, and so does every batch that meets
  // a full disk until one gets through (Store::stop_waiting_for_space).
  void stop_waiting_for_space();

  // One statement of a transition and what its answer must show.
  struct Step {
    enum class Check { kNone, kChanged, kReturned };
    // kShard: the row's shard, to be fenced (a task or timer removed by id).
    enum class Capture { kNone, kTaskId, kTimerId, kShard };
    std::string sql;
    PgParams params;
    Check check = Check::kNone;
    Capture capture = Capture::kNone;
    // Why the transition fails when the check does not hold (may read).
    std::function<Status(PgConnection&)> fail;
    int64_t fences = -1;  // the shard this step fences, if it is a fence
  };

 private:
  struct Pending {
    Transition transition;
    CommitCallback done;
  };

  void run();
  // Commits `batch`, waiting for room on a full disk; answers every write.
  void commit_batch(std::deque<Pending>& batch);
  // One try at committing `batch`: every write's outcome.
  std::vector<Result<CommitResult>> attempt_batch(std::deque<Pending>& batch);
  // After a batch of several failed for want of space: keeps its first half
  // and puts the rest back at the front of the queue; false if it cannot
  // (one write, or closing, or told to stop waiting).
  bool narrow(std::deque<Pending>& batch);
  // After a single write failed for want of space: reports and backs off.
  // False once the store is closing or told to stop waiting.
  bool wait_for_space(const Status& error);
  // How many writes the next batch takes (mu_ held).
  int batch_limit() const;
  // The statements of `t` in order, or why it is refused before any runs.
  Result<std::vector<Step>> plan(const Transition& t) const;
  // Runs the plans of a batch; fills `outcomes` for the planned ones.
  // false: the transaction as a whole failed (outcomes say why).
  bool run_savepoints(std::vector<std::vector<Step>*>& plans, std::vector<Result<CommitResult>*>& outcomes);
  // true: every condition held (outcomes filled); false: rolled back, or
  // the connection failed (`failure` set).
  bool run_pipelined(std::vector<std::vector<Step>*>& plans, std::vector<Result<CommitResult>*>& outcomes,
                     Status& failure);
  Status commit();
  // The fence of `shard` at the range this node holds it with, or why the
  // transition cannot be written (this node does not serve the shard).
  Result<Step> fence(int64_t shard) const;
  // Fences the shards that `captured` names and `steps` did not fence:
  // the failed fence's status when one is not this node's.
  Status fence_rows(const std::vector<Step>& steps, const std::vector<int64_t>& captured);
  std::unique_ptr<PgConnection> db_;
  const int shard_count_;
  const int max_batch_;
  const PgCommitShape shape_;
  FaultHook fault_hook_;
  const Clock& clock_;
  const PgShardLeases* leases_;
  WriteStallTracker stall_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  bool stopping_ = false;
  bool give_up_waiting_ = false;  // set by stop_waiting_for_space(), cleared when a batch gets through
  // Below max_batch_ after a batch was narrowed for want of space; doubles
  // back with each commit that finds room.
  int batch_limit_;
  WriterStats stats_;
  std::thread thread_;  // last: starts once everything above is ready
};

}  // namespace reprise::engine
