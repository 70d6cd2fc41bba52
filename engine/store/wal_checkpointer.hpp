// WalCheckpointer: copies the WAL back into the database file off the
// commit path.
//
// SQLite's automatic checkpoint runs inside a COMMIT, on the committing
// thread, once the WAL holds 1,000 pages: that commit then also copies the
// WAL and syncs it again and the database file, and every transition
// waiting on it waits for those. The store turns it off on the writer's
// connection (SqliteDb::replace_auto_checkpoint), hands the WAL's size after
// each commit to wal_committed(), and calls between_batches() when the
// writer holds no transaction. Run by a thread of its own (kOwnThread):
//  - a PASSIVE checkpoint, on a connection of its own, once the WAL holds
//    `passive_after_pages`: it waits for nobody, and the writer goes on
//    committing meanwhile. It copies the WAL as it was when it began, and
//    syncs the database: the bulk of the work.
//  - the writer commits meanwhile (under steady load, always), so the WAL
//    is never all copied when the writer begins its next transaction, and
//    SQLite starts the WAL over only then. So the writer, between two
//    batches, copies what came after (a few pages; a PASSIVE checkpoint on
//    its own connection, outside any transaction), and the WAL starts over
//    at its next commit unless a reader is still in it.
//  - a RESTART checkpoint once the WAL holds `restart_after_pages` (readers
//    kept the others from finishing): it waits up to `restart_wait` for the
//    readers to move past the WAL's end, holding the writer back meanwhile,
//    so that the WAL cannot grow without bound while readers come and go. A
//    reader that holds one snapshot for ever still keeps SQLite from reusing
//    the WAL; a restart that could not wait long enough is tried again once
//    another `passive_after_pages` have been written.
// Or, kCaller, run whole by the writer between batches once it finds its
// queue empty (and after every commit_next_batch() without a writer thread:
// the deterministic simulator then checkpoints at the same steps every run).
//
// A checkpoint never loses a committed transaction, and changes nothing of
// the writer's durability (synchronous=FULL syncs each commit's WAL frames
// before COMMIT returns).
//
// Thread safety: wal_committed() and stats() from any thread;
// between_batches() from the writer's thread only, with no transaction open.
// Lifetime: outlives the connection whose commits call wal_committed().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "engine/store/sqlite_db.hpp"
#include "engine/store/storage_stats.hpp"

namespace reprise::engine {

struct CheckpointOptions {
  enum class Runner { kOwnThread, kCaller };
  Runner runner = Runner::kOwnThread;
  int64_t passive_after_pages = 1000;  // SQLite's automatic checkpoint's default
  int64_t restart_after_pages = 16000;
  std::chrono::milliseconds restart_wait{1000};
};

class WalCheckpointer {
 public:
  // `db`: a connection of its own to the store's file.
  WalCheckpointer(std::unique_ptr<SqliteDb> db, CheckpointOptions options);
  // Stops the thread (a checkpoint in progress finishes first).
  ~WalCheckpointer();
  WalCheckpointer(const WalCheckpointer&) = delete;
  WalCheckpointer& operator=(const WalCheckpointer&) = delete;

  // After each commit of the writer: the WAL's size in pages. Cheap; wakes
  // the thread when a checkpoint is due.
  void wal_committed(int64_t wal_pages);
  // The writer, between batches, with no transaction open on `writer_db`;
  // `idle`: its queue is empty. Copies the rest of the WAL after a
  // background checkpoint (kOwnThread), or checkpoints if one is due and
  // the writer is idle (kCaller).
  void between_batches(SqliteDb& writer_db, bool idle);

  using Stats = CheckpointStats;
  Stats stats() const;

 private:
  // Whether a checkpoint is due, and a restart (mu_ held).
  bool due() const;
  bool restart_due() const;
  // The background (or kCaller) checkpoint, on db_.
  void checkpoint();
  void run();
  // Folds a checkpoint's outcome into the stats (mu_ held).
  void count(const CheckpointOutcome& outcome);

  std::unique_ptr<SqliteDb> db_;
  const CheckpointOptions options_;
  // Set by the thread after its checkpoint when the writer committed
  // meanwhile; taken by between_batches().
  std::atomic<bool> writer_to_finish_{false};

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  // Of the current WAL (all reset when it is started over, seen as a WAL
  // that got smaller): the pages already copied into the database; the size
  // at which the next checkpoint is due (one that readers kept from copying
  // it all is not tried again at every commit); the size at which a restart
  // is due.
  int64_t copied_through_ = 0;
  int64_t next_due_at_ = 0;
  int64_t next_restart_at_ = 0;
  Stats stats_;
  std::thread thread_;  // last: starts once everything above is ready
};

}  // namespace reprise::engine
