// PostgresStore: the Store on a PostgreSQL database (postgresql://... URL),
// for servers that share one replicated database.
//
// One writer connection on a PgTransitionWriter thread commits transitions
// in groups (postgres_writer.hpp); a pool of connections serves reads and
// the blob store's own short transactions. Nothing is acknowledged before
// PostgreSQL's COMMIT has returned, which with the server's defaults
// (fsync = on, synchronous_commit = on) means the commit is flushed to its
// WAL; the store reads both settings when it opens (PgOpenReport) so the
// server can warn when they are off. Every row of an execution carries its
// shard (shard.hpp), with the shard count fixed when the database is created.
// docs/storage.md, "PostgreSQL".
//
// Several stores (reprise-server nodes) may share one database: each takes
// leases on the shards it serves (pg_shard_leases.hpp), writes only to
// those, fenced by their range_id, and sees only their timers; a store
// alone takes every shard. docs/cluster.md.
#pragma once

#include <memory>
#include <string>

#include "engine/store/database_url.hpp"
#include "engine/store/postgres/pg_shard_leases.hpp"
#include "engine/store/postgres/postgres_blob_store.hpp"
#include "engine/store/postgres/postgres_writer.hpp"
#include "engine/store/shard.hpp"
#include "engine/store/store.hpp"

namespace reprise::engine {

struct PostgresStoreOptions {
  int max_batch = 128;                   // transitions per PostgreSQL transaction
  int connections = 4;                   // the pool for reads and blob writes
  int shard_count = kDefaultShardCount;  // of a new database; an existing one keeps its own
  PgCommitShape commit_shape = PgCommitShape::kPipelined;
  BlobStoreOptions blobs{};
  FaultHook fault_hook{};  // tests only
  // A full disk: writes wait for room, and the report hears of it,
  // rate-limited (write_stall.hpp).
  StallReport on_write_stall{};
  const Clock* clock = nullptr;  // defaults to the system clock
  bool rotate_task_token_key = false;
  // This node's shard leases; an empty node id is made up (host name and a
  // random suffix), so a restart waits for the old leases to run out.
  ShardLeaseOptions cluster{};
};

// What opening found, for the server's log.
struct PgOpenReport {
  bool created = false;  // the schema was made by this open
  int schema_version = 0;
  int shard_count = 0;
  std::string server_version;
  // PostgreSQL's own durability settings: a commit survives an OS crash or
  // power loss only with both on.
  std::string fsync;
  std::string synchronous_commit;
};

class PostgresStore final : public Store {
 public:
  // Connects, and creates or migrates the schema (see postgres_schema.hpp).
  // Errors name the database (its URL without the password).
  static Result<std::unique_ptr<PostgresStore>> open(const std::string& url, PostgresStoreOptions options = {});
  ~PostgresStore() override;

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
  StorageStats storage_stats() const override;
  std::vector<TaskTokenKey> task_token_keys() const override { return task_token_keys_; }
  ShardOwnership* ownership() override { return leases_.get(); }
  PgShardLeases& leases() { return *leases_; }

  WriterStats writer_stats() const { return writer_->stats(); }
  size_t queued_writes() const { return writer_->queued(); }
  std::string write_problem() const override { return writer_->problem(); }
  void stop_waiting_for_space() override { writer_->stop_waiting_for_space(); }
  const PgOpenReport& open_report() const { return report_; }
  const std::string& name() const { return name_; }  // the URL without its password

 private:
  PostgresStore(std::string name, PgOpenReport report, const Clock& clock, std::unique_ptr<PgPool> pool,
                std::unique_ptr<PgShardLeases> leases, std::unique_ptr<PgTransitionWriter> writer,
                std::vector<TaskTokenKey> task_token_keys, BlobStoreOptions blob_options);
  int64_t shard(const std::string& namespace_id, const std::string& workflow_id) const;

  std::string name_;
  PgOpenReport report_;
  const Clock& clock_;
  std::unique_ptr<PgPool> pool_;
  std::unique_ptr<PgShardLeases> leases_;  // before the writer, which fences with it
  std::unique_ptr<PgTransitionWriter> writer_;
  std::unique_ptr<PgBlobStore> blobs_;
  std::vector<TaskTokenKey> task_token_keys_;
};

}  // namespace reprise::engine
