// TransitionWriter: the store's single writer thread, with group commit.
//
// Callers queue transitions; the thread takes up to `max_batch` of them,
// applies each inside its own SAVEPOINT of one SQLite transaction, commits
// once, and only then acknowledges every transition of the batch. A
// transition whose condition fails is rolled back to its savepoint and fails
// alone; a failed COMMIT fails the whole batch. Throughput comes from sharing
// one fsync among many transitions, never from skipping it.
//
// The blob store writes through the same thread (submit_job): on one
// connection, nothing competes with the writer for SQLite's write lock, and a
// blob's rows share the batch's fsync.
//
// A batch the disk has no room for (SQLITE_FULL, or a full disk or file size
// limit behind an I/O error) is not failed. A batch of several is narrowed
// first: its first half is tried at once and the rest goes back to the front
// of the queue (so commits keep the order of submission), down to a single
// write, so that room for a few writes lets a few through. The batches that
// follow are as small, and double with each commit until they are back at
// `max_batch`. A single write the disk has no room for waits: the writer
// checkpoints the WAL with TRUNCATE (what the checkpoint frees goes back to
// the file system), waits, and tries it again, backing off from 100 ms to
// 10 s, until it goes through or the store closes. Everything queued waits
// meanwhile: nothing acknowledged is lost, and nothing is failed that a freed
// disk would let through. problem() says so, and `report` hears of it at the
// first failure to wait, every 10 s after (with the attempts in between) and
// once writes go through again.
//
// The WAL is checkpointed off the commit path (wal_checkpointer.hpp): the
// writer hands its `checkpointer` the time between two batches, outside any
// transaction (without a thread, after every commit_next_batch(): the
// simulator's checkpoints then land at the same steps every run).
//
// Without a thread of its own (`own_thread` false: the deterministic
// simulator) nothing is committed until the driver calls commit_next_batch(),
// which commits one batch on the calling thread: the driver chooses when
// commits land, and can stop the process between a commit and its
// acknowledgement (FaultHook). A batch waiting for room then fails at once,
// as with `wait_when_full` false, rather than sleeping on the driver's thread.
//
// Thread safety: submit() from any thread; callbacks run on the writer thread
// (or in commit_next_batch()).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "engine/store/records.hpp"
#include "engine/store/sqlite_db.hpp"
#include "engine/store/storage_stats.hpp"
#include "engine/store/store.hpp"
#include "engine/store/wal_checkpointer.hpp"
#include "engine/store/write_stall.hpp"

namespace reprise::engine {

// Moments a test can stop or fail the writer at. Returning a non-OK Status at
// kBeforeCommit fails the batch as if COMMIT had failed; a hook may also end
// the process there to simulate a crash.
enum class FaultPoint { kBeforeCommit, kAfterCommit };
using FaultHook = std::function<Status(FaultPoint)>;

class TransitionWriter {
 public:
  // With `wait_when_full` false, a batch the disk has no room for fails
  // with RESOURCE_EXHAUSTED at once (tools, and tests of that failure).
  TransitionWriter(std::unique_ptr<SqliteDb> db, int max_batch, FaultHook fault_hook, bool wait_when_full = true,
                   StallReport report = nullptr, bool own_thread = true, WalCheckpointer* checkpointer = nullptr);
  // Drains the queue (every queued transition is committed or failed), then
  // stops the thread. Without a thread, fails what is still queued with
  // UNAVAILABLE: the driver commits by stepping, never by closing.
  ~TransitionWriter();

  // Without a thread of its own: commits up to max_batch queued writes now
  // and answers them (on this thread); false if none was queued.
  bool commit_next_batch();
  // Writes queued and not yet taken into a batch.
  size_t queued() const;

  void submit(Transition transition, CommitCallback done);
  // Runs `job` on the writer's connection inside the next batch's
  // transaction, in a savepoint of its own like a transition; `done` runs on
  // the writer thread once the batch is committed (or failed) and must not
  // block.
  using Job = std::function<Status(SqliteDb&)>;
  void submit_job(Job job, std::function<void(Status)> done);

  using Stats = WriterStats;
  Stats stats() const;
  // "" while writes go through; otherwise why they wait, and since when.
  std::string problem() const;
  // A batch waiting for room fails now, and so does every batch that meets
  // a full disk until one gets through (Store::stop_waiting_for_space).
  void stop_waiting_for_space();

 private:
  struct Pending {
    Transition transition;
    Job job;  // set instead of a transition for submit_job()
    CommitCallback done;
  };

  void run();
  void commit_batch(std::deque<Pending>& batch);
  std::vector<Result<CommitResult>> attempt_batch(std::deque<Pending>& batch);
  // After a batch of several failed for want of space: keeps its first half
  // and puts the rest back at the front of the queue; false if it cannot
  // (one write, or closing, or told to stop waiting).
  bool narrow(std::deque<Pending>& batch);
  // How many writes the next batch takes (mu_ held).
  int batch_limit() const;
  // After a batch failed for want of space: checkpoint, report, back off.
  // False once the store is closing (the batch fails then).
  bool wait_for_space(const Status& error);
  Status apply(const Transition& t, CommitResult& result);
  Status apply_execution(const ExecutionWrite& w, CommitResult& result);
  Status apply_current_run(const CurrentRunWrite& w);
  Status apply_tasks(const Transition& t, CommitResult& result);
  Status apply_timers(const Transition& t, CommitResult& result);
  Status apply_visibility(const VisibilityRecord& v);
  Status apply_blob_ref(const BlobReference& r);
  Status delete_execution(const ExecutionKey& key);
  // A closed run's workflow-task and activity-task rows and timers: no use
  // any more, dropped so a restart does not load them only to find them
  // stale. Its transfer rows stay (they carry the close to others).
  Status drop_pending_work(const ExecutionKey& key);

  std::unique_ptr<SqliteDb> db_;
  const int max_batch_;
  FaultHook fault_hook_;
  const bool wait_when_full_;
  const bool own_thread_;
  WalCheckpointer* const checkpointer_;  // may be null
  WriteStallTracker stall_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  bool stopping_ = false;
  bool give_up_waiting_ = false;  // set by stop_waiting_for_space(), cleared when a batch gets through
  // Below max_batch_ after a batch was narrowed for want of space; doubles
  // back with each commit that finds room.
  int batch_limit_;
  Stats stats_;
  std::thread thread_;  // last: starts after everything above is ready (if own_thread_)
};

}  // namespace reprise::engine
