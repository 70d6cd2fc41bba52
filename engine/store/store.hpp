// Store: the engine's durable state — executions, history, the current run of
// each workflow id, pending tasks, timers, visibility and claim-check blobs.
//
// Writes: every state transition is one Transition, committed atomically
// (transactional outbox: the events, the new state and the tasks it creates go
// in together). A commit is acknowledged — the callback runs or commit()
// returns — only after it is durable at the store's Durability level.
// Transitions are conditional (execution versions, current-run ids, task and
// timer existence); a lost condition fails that transition alone with ABORTED
// or ALREADY_EXISTS and writes nothing of it.
//
// Reads see every acknowledged commit.
//
// Thread safety: all methods may be called from any thread concurrently.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/store/blob_store.hpp"
#include "engine/store/records.hpp"
#include "engine/store/shard_ownership.hpp"
#include "engine/store/storage_stats.hpp"
#include "engine/store/task_token_keys.hpp"
#include "history/status.hpp"

namespace reprise::engine {

struct VisibilityQuery {
  std::string namespace_id;
  std::optional<std::string> workflow_type;
  std::optional<std::string> task_queue;
  std::optional<v1::WorkflowExecutionStatus> status;
  std::optional<TimePoint> started_after;   // inclusive
  std::optional<TimePoint> started_before;  // exclusive
  std::string workflow_id_prefix;           // "" = any
  int page_size = 100;
  std::string page_token;  // from the previous page; "" for the first
};

struct VisibilityPage {
  std::vector<VisibilityRecord> records;  // newest start first
  std::string next_page_token;            // "" when there is no more
};

// A closed run and when it closed: what retention deletes.
struct ClosedRun {
  ExecutionKey key;
  TimePoint close_time;
};

using CommitCallback = std::function<void(Result<CommitResult>)>;

class Store {
 public:
  virtual ~Store() = default;

  // Queues a transition for the group-commit writer. `done` runs on the
  // writer thread after the batch holding it is committed (or failed); it
  // must not block.
  virtual void commit_async(Transition transition, CommitCallback done) = 0;
  // Blocks until the transition is committed or failed.
  Result<CommitResult> commit(Transition transition);

  virtual Result<ExecutionRecord> get_execution(const ExecutionKey& key) = 0;
  virtual Result<CurrentRun> get_current_run(const std::string& namespace_id, const std::string& workflow_id) = 0;
  // Batches holding events >= from_event_id, in order, at most max_batches.
  virtual Result<std::vector<HistoryBatch>> read_history(const ExecutionKey& key, int64_t from_event_id,
                                                         int max_batches) = 0;
  // Pending tasks with ids > after_task_id in id order (rebuilding queues).
  virtual Result<std::vector<TaskRecord>> load_tasks(int64_t after_task_id, int limit) = 0;
  // Timers with fire_at <= until, earliest first.
  virtual Result<std::vector<TimerRecord>> due_timers(TimePoint until, int limit) = 0;
  virtual Result<std::optional<TimePoint>> next_timer_time() = 0;
  virtual Result<VisibilityPage> list_executions(const VisibilityQuery& query) = 0;
  // Runs of `namespace_id` that closed before `closed_before`, oldest close
  // first, at most `limit`; after `after` (the last run of the previous
  // page) when given, so a caller that skips some still moves on.
  virtual Result<std::vector<ClosedRun>> closed_runs(const std::string& namespace_id, TimePoint closed_before,
                                                     const std::optional<ClosedRun>& after, int limit) = 0;

  // The namespace registry, by name; 'default' is always there. Writes are
  // durable when they return; never call them on the store's writer thread.
  virtual Result<std::vector<NamespaceRecord>> list_namespaces() = 0;
  // ALREADY_EXISTS when the name is taken.
  virtual Status create_namespace(const NamespaceRecord& record) = 0;
  // Sets the description and retention of `record.name`; NOT_FOUND when no
  // namespace has that name.
  virtual Status update_namespace(const NamespaceRecord& record) = 0;

  // Every API key, revoked ones included, by name. Keys are created and
  // revoked on the database itself (reprise admin key), not through here.
  virtual Result<std::vector<ApiKeyRecord>> api_keys() = 0;

  virtual BlobStore& blobs() = 0;
  // "" while writes go through; otherwise why they wait (a full disk), and
  // since when: what describe and the health status report.
  virtual std::string write_problem() const { return ""; }
  // Writes waiting for room on the disk fail now with the disk's error, and
  // so does every write that meets a full disk until one gets through: what
  // a shutdown calls, so it never waits for the disk.
  virtual void stop_waiting_for_space() {}
  // What the store counted about its writes since it opened (all zero for a
  // store that counts nothing).
  virtual StorageStats storage_stats() const { return {}; }
  // The keys that sign task tokens, newest first, read when the store
  // opened; empty for a store that keeps none (the engine then signs with a
  // key of its own that dies with it).
  virtual std::vector<TaskTokenKey> task_token_keys() const { return {}; }
  // The shards this node serves, for a store shared by a cluster of nodes
  // (shard_ownership.hpp); nullptr for a store that serves everything. Its
  // due_timers() and next_timer_time() then see only the timers of the
  // shards it serves. Lives as long as the store.
  virtual ShardOwnership* ownership() { return nullptr; }
};

}  // namespace reprise::engine
