// SqliteStore: the Store on one SQLite file in WAL mode.
//
// One writer connection on the TransitionWriter thread commits transitions in
// groups, and the blob store's writes with them; a small pool of reader
// connections serves reads concurrently (WAL lets readers run beside the
// writer); a WalCheckpointer with a connection of its own checkpoints the WAL
// off the commit path. Every connection goes through a SyncCountingVfs, which
// counts the syncs storage_stats() reports.
// Durability is explicit (StoreOptions::durability) and documented in
// docs/storage.md.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "engine/store/database_lock.hpp"
#include "engine/store/read_pool.hpp"
#include "engine/store/sqlite_blob_store.hpp"
#include "engine/store/sqlite_db.hpp"
#include "engine/store/store.hpp"
#include "engine/store/sync_counting_vfs.hpp"
#include "engine/store/transition_writer.hpp"
#include "engine/store/wal_checkpointer.hpp"

namespace reprise::engine {

struct StoreOptions {
  Durability durability = Durability::kFull;
  int max_batch = 128;  // transitions per SQLite transaction
  int read_connections = 4;
  // PRAGMA quick_check when an existing file is opened: reads the whole file
  // once (670 MB: 0.6 s from the page cache, 24 s from a cold disk on the
  // test VM), and refuses a damaged one with DATA_LOSS naming what the check
  // found. Off only for files too big to read at every start; damage then
  // shows as reads that fail.
  bool quick_check = true;
  // An existing file that holds no database (0 bytes, or SQLite's empty
  // database) is refused unless this is set, in case it is a database lost to
  // truncation; a missing file is always created.
  bool init_empty_file = false;
  BlobStoreOptions blobs{};
  // A write the disk has no room for waits and is tried again once there
  // is (TransitionWriter), or with false fails with RESOURCE_EXHAUSTED at once.
  bool wait_when_full = true;
  StallReport on_write_stall{};  // hears of writes waiting for room, rate-limited
  FaultHook fault_hook{};        // tests only
  // false: the writer has no thread, and commits only when the driver calls
  // commit_next_batch() (the deterministic simulator; transition_writer.hpp).
  bool writer_thread = true;
  // When and by whom the WAL is checkpointed (wal_checkpointer.hpp). kCaller:
  // by the writer when idle; always so without a writer thread.
  CheckpointOptions checkpoints{};
  const Clock* clock = nullptr;  // defaults to the system clock
  // The registered SQLite VFS the store's connections go through; "" is
  // SQLite's default. Tests only: one that drops what was never synced
  // simulates a power loss (tests/store/power_loss_vfs.hpp). A missing file
  // is still created through the default VFS, whole and synced.
  std::string vfs{};
  // Sign new task tokens with a new key (the one before it still verifies;
  // task_token_keys.hpp).
  bool rotate_task_token_key = false;
  // Refuse a file another store has open, in any process (database_lock.hpp).
  // Off only in the simulator, which abandons a crashed store undestroyed and
  // opens the file again.
  bool lock_file = true;
};

// What opening the file found, for the server's log.
struct OpenReport {
  bool created = false;        // the file was missing and is now a new database
  bool quick_checked = false;  // quick_check ran, and passed
  int64_t pages = 0;
  std::chrono::nanoseconds quick_check_time{0};
  // Read back from each connection once configured: the writer's first,
  // then the readers'.
  std::vector<ConnectionSettings> connections;
};

class SqliteStore final : public Store {
 public:
  // Opens the database at `path`, or creates it whole when the file is
  // missing (written beside it, then linked into place: a crash never leaves
  // a half-made file at `path`), and migrates an older schema. Nothing is
  // written to an existing file before it is known to be a sound Reprise
  // database. Errors name the file and the problem: a missing directory, an
  // empty file, a file that is not SQLite or not Reprise, a newer schema,
  // damage found by quick_check.
  static Result<std::unique_ptr<SqliteStore>> open(const std::string& path, StoreOptions options = {});
  ~SqliteStore() override;

  void commit_async(Transition transition, CommitCallback done) override;
  Result<ExecutionRecord> get_execution(const ExecutionKey& key) override;
  Result<CurrentRun> get_current_run(const std::string& namespace_id, const std::string& workflow_id) override;
  Result<std::vector<HistoryBatch>> read_history(const ExecutionKey& key, int64_t from_event_id,
                                                 int max_batches) override;
  Result<std::vector<TaskRecord>> load_tasks(int64_t after_task_id, int limit) override;
  Result<std::vector<TimerRecord>> due_timers(TimePoint until, int limit) override;
  Result<std::optional<TimePoint>> next_timer_time() override;
  Result<VisibilityPage> list_executions(const VisibilityQuery& query) override;
  Result<std::vector<ClosedRun>> closed_runs(const std::string& namespace_id, TimePoint closed_before,
                                             const std::optional<ClosedRun>& after, int limit) override;
  Result<std::vector<NamespaceRecord>> list_namespaces() override;
  Status create_namespace(const NamespaceRecord& record) override;
  Status update_namespace(const NamespaceRecord& record) override;
  Result<std::vector<ApiKeyRecord>> api_keys() override;
  BlobStore& blobs() override { return *blobs_; }
  std::string write_problem() const override { return writer_->problem(); }
  void stop_waiting_for_space() override { writer_->stop_waiting_for_space(); }
  StorageStats storage_stats() const override;
  std::vector<TaskTokenKey> task_token_keys() const override { return task_token_keys_; }

  TransitionWriter::Stats writer_stats() const { return writer_->stats(); }
  // With writer_thread false: commits the next batch on this thread (false
  // if nothing was queued), and how many writes wait for one.
  bool commit_next_batch() { return writer_->commit_next_batch(); }
  size_t queued_writes() const { return writer_->queued(); }
  // SQLite transactions committed on the file by this store, every
  // connection counted.
  int64_t commits() const { return commits_->load(); }
  const std::string& path() const { return path_; }
  const OpenReport& open_report() const { return report_; }

 private:
  SqliteStore(std::unique_ptr<SyncCountingVfs> vfs, std::string path, OpenReport report,
              std::unique_ptr<std::atomic<int64_t>> commits, std::unique_ptr<WalCheckpointer> checkpointer,
              std::unique_ptr<ReadPool> readers, std::unique_ptr<TransitionWriter> writer,
              std::unique_ptr<SqliteBlobStore> blobs, std::vector<TaskTokenKey> task_token_keys);

  DatabaseLock lock_;                     // first: released once every connection is closed
  std::unique_ptr<SyncCountingVfs> vfs_;  // outlives every connection opened through it
  std::string path_;
  OpenReport report_;
  std::unique_ptr<std::atomic<int64_t>> commits_;  // outlives the connections that count into it
  std::unique_ptr<WalCheckpointer> checkpointer_;  // outlives the writer, whose commits call it
  std::unique_ptr<ReadPool> readers_;
  std::unique_ptr<TransitionWriter> writer_;
  // Runs `job` on the writer, in a transaction of its own, and waits for its commit.
  Status write_now(TransitionWriter::Job job);

  std::unique_ptr<SqliteBlobStore> blobs_;  // writes through writer_
  std::vector<TaskTokenKey> task_token_keys_;
};

}  // namespace reprise::engine
