// SqliteStore: the Store on one SQLite file in WAL mode.
//
// One writer connection on the TransitionWriter thread commits transitions in
// groups; a small pool of reader connections serves reads concurrently (WAL
// lets readers run beside the writer); the blob store has its own connection.
// Durability is explicit (StoreOptions::durability) and documented in
// docs/storage.md.
#pragma once

#include <memory>
#include <string>

#include "engine/store/read_pool.hpp"
#include "engine/store/sqlite_blob_store.hpp"
#include "engine/store/sqlite_db.hpp"
#include "engine/store/store.hpp"
#include "engine/store/transition_writer.hpp"

namespace reprise::engine {

struct StoreOptions {
  Durability durability = Durability::kFull;
  int max_batch = 128;  // transitions per SQLite transaction
  int read_connections = 4;
  bool integrity_check = false;  // PRAGMA quick_check on open (reads the whole file)
  BlobStoreOptions blobs{};
  FaultHook fault_hook{};        // tests only
  const Clock* clock = nullptr;  // defaults to the system clock
};

class SqliteStore final : public Store {
 public:
  // Opens or creates the database at `path`, migrating an older schema. Errors
  // name the file and the problem: a missing directory, a file that is not a
  // Reprise database, a newer schema, corruption.
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
  BlobStore& blobs() override { return *blobs_; }

  TransitionWriter::Stats writer_stats() const { return writer_->stats(); }
  const std::string& path() const { return path_; }

 private:
  SqliteStore(std::string path, std::unique_ptr<ReadPool> readers, std::unique_ptr<SqliteBlobStore> blobs,
              std::unique_ptr<TransitionWriter> writer);

  std::string path_;
  std::unique_ptr<ReadPool> readers_;
  std::unique_ptr<SqliteBlobStore> blobs_;
  std::unique_ptr<TransitionWriter> writer_;
};

}  // namespace reprise::engine
