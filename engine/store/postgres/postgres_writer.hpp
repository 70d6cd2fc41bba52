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
#include "reprise/clock.hpp"

namespace reprise::engine {

enum class PgCommitShape { kSavepoints, kPipelined };

class PgTransitionWriter {
 public:
  // `leases`: the shards this node holds (nullptr: no fencing); outlives
  // the writer.
  PgTransitionWriter(std::unique_ptr<PgConnection> db, int shard_count, int max_batch, PgCommitShape shape,
                     FaultHook fault_hook, const Clock& clock, const PgShardLeases* leases);
  // Commits or fails everything queued, then stops the thread.
  ~PgTransitionWriter();

  void submit(Transition transition, CommitCallback done);
  WriterStats stats() const;

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
  void commit_batch(std::deque<Pending>& batch);
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

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  bool stopping_ = false;
  WriterStats stats_;
  std::thread thread_;  // last: starts once everything above is ready
};

}  // namespace reprise::engine
