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
// Thread safety: submit() from any thread; callbacks run on the writer thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "engine/store/records.hpp"
#include "engine/store/sqlite_db.hpp"
#include "engine/store/store.hpp"

namespace reprise::engine {

// Moments a test can stop or fail the writer at. Returning a non-OK Status at
// kBeforeCommit fails the batch as if COMMIT had failed; a hook may also end
// the process there to simulate a crash.
enum class FaultPoint { kBeforeCommit, kAfterCommit };
using FaultHook = std::function<Status(FaultPoint)>;

class TransitionWriter {
 public:
  TransitionWriter(std::unique_ptr<SqliteDb> db, int max_batch, FaultHook fault_hook);
  // Drains the queue (every queued transition is committed or failed), then
  // stops the thread.
  ~TransitionWriter();

  void submit(Transition transition, CommitCallback done);
  // Runs `job` on the writer's connection inside the next batch's
  // transaction, in a savepoint of its own like a transition; `done` runs on
  // the writer thread once the batch is committed (or failed) and must not
  // block.
  using Job = std::function<Status(SqliteDb&)>;
  void submit_job(Job job, std::function<void(Status)> done);

  struct Stats {
    int64_t transitions = 0;  // acknowledged as committed
    int64_t batches = 0;      // SQLite transactions committed
    int64_t jobs = 0;         // submit_job() writes committed
  };
  Stats stats() const;

 private:
  struct Pending {
    Transition transition;
    Job job;  // set instead of a transition for submit_job()
    CommitCallback done;
  };

  void run();
  void commit_batch(std::deque<Pending>& batch);
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

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  bool stopping_ = false;
  Stats stats_;
  std::thread thread_;  // last: starts after everything above is ready
};

}  // namespace reprise::engine
