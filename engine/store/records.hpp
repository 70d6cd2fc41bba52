// The rows the store keeps, and Transition: everything one state change of the
// engine writes, committed atomically or not at all.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "history/sha256.hpp"
#include "reprise/clock.hpp"
#include "reprise/v1/common.pb.h"

namespace reprise::engine {

namespace v1 = ::reprise::v1;

struct ExecutionKey {
  std::string namespace_id;
  std::string workflow_id;
  std::string run_id;

  std::string to_string() const { return namespace_id + "/" + workflow_id + "/" + run_id; }
  friend bool operator==(const ExecutionKey&, const ExecutionKey&) = default;
  friend auto operator<=>(const ExecutionKey&, const ExecutionKey&) = default;
};

// An execution's mutable state. `state` is opaque to the store (the engine
// serializes its own state machine into it); the store owns `version` and
// `next_event_id` and checks them on every write.
struct ExecutionRecord {
  ExecutionKey key;
  int64_t version = 0;        // 1 after creation, +1 per transition
  int64_t next_event_id = 1;  // id the next appended event must have
  v1::WorkflowExecutionStatus status = v1::WORKFLOW_EXECUTION_STATUS_RUNNING;
  std::string state;
};

// Consecutive events first_event_id..last_event_id, encoded by
// history::EventBatchCodec.
struct HistoryBatch {
  int64_t first_event_id = 0;
  int64_t last_event_id = 0;
  std::string data;
};

// Which run is current for a workflow id. Start, continue-as-new and close
// update it; the workflow-id reuse policy reads it.
struct CurrentRun {
  std::string namespace_id;
  std::string workflow_id;
  std::string run_id;
  v1::WorkflowExecutionStatus status = v1::WORKFLOW_EXECUTION_STATUS_RUNNING;
  std::string start_request_id;  // makes a retried StartWorkflow idempotent
};

enum class TaskKind : int {
  kWorkflowTask = 1,
  kActivityTask = 2,
  // Engine-internal work on another execution (internal::TransferTask): it
  // never reaches a worker.
  kTransfer = 3,
};

// A task waiting for a worker (transactional outbox). The id is assigned on
// commit, increases, and is never reused.
struct TaskRecord {
  int64_t task_id = 0;
  TaskKind kind = TaskKind::kWorkflowTask;
  std::string queue;
  ExecutionKey execution;
  std::string payload;  // opaque to the store
};

// A durable timer: user timers, activity and workflow-task timeouts, retry
// backoffs, run timeouts. The id is assigned on commit.
struct TimerRecord {
  int64_t timer_id = 0;
  TimePoint fire_at;
  ExecutionKey execution;
  std::string payload;  // opaque to the store
};

// What ListWorkflows filters and shows.
struct VisibilityRecord {
  ExecutionKey key;
  std::string workflow_type;
  std::string task_queue;
  v1::WorkflowExecutionStatus status = v1::WORKFLOW_EXECUTION_STATUS_RUNNING;
  TimePoint start_time;
  std::optional<TimePoint> close_time;
};

// A claim-check blob referenced from an execution's history; the blob is
// kept while any reference remains.
struct BlobReference {
  history::Sha256Digest sha256{};
  ExecutionKey owner;
};

// Writes to one execution, conditional on its version: a writer that read an
// older version loses (ABORTED) instead of overwriting.
struct ExecutionWrite {
  ExecutionKey key;
  int64_t expected_version = 0;  // 0: the execution must not exist yet
  v1::WorkflowExecutionStatus status = v1::WORKFLOW_EXECUTION_STATUS_RUNNING;
  std::string state;
  // Appended history; must start at the execution's next_event_id.
  std::optional<HistoryBatch> events;
};

// Sets the current run of a workflow id, conditional on what it was.
struct CurrentRunWrite {
  CurrentRun run;
  std::string expected_run_id;  // "": no current run may exist yet
};

struct Transition {
  std::vector<ExecutionWrite> executions;
  std::vector<CurrentRunWrite> current_runs;
  std::vector<TaskRecord> add_tasks;
  std::vector<int64_t> remove_tasks;  // each must exist (else ABORTED)
  std::vector<TimerRecord> add_timers;
  std::vector<int64_t> remove_timers;  // each must exist (else ABORTED)
  std::vector<VisibilityRecord> visibility;
  std::vector<BlobReference> add_blob_refs;
  // Removes everything of these executions: state, history, tasks, timers,
  // visibility and blob references (retention).
  std::vector<ExecutionKey> delete_executions;
};

// A namespace of the registry: every execution, task, timer and blob
// belongs to one, and nothing of one is visible from another.
struct NamespaceRecord {
  std::string name;
  std::string description;
  // How long a closed run is kept; nothing: the server's default (its
  // --retention). Zero keeps runs forever.
  std::optional<std::chrono::seconds> retention;
  TimePoint created_at;
};

// An API key as the store keeps it: never the secret, only its SHA-256.
struct ApiKeyRecord {
  std::string name;  // what the operator calls it (list, revoke)
  history::Sha256Digest sha256{};
  std::vector<std::string> namespaces;  // "*": every namespace
  std::vector<std::string> roles;       // worker, client, reader, admin
  TimePoint created_at;
  std::optional<TimePoint> revoked_at;
};

// What a committed transition was assigned, in the order of its vectors.
struct CommitResult {
  std::vector<int64_t> versions;  // new version per ExecutionWrite
  std::vector<int64_t> task_ids;
  std::vector<int64_t> timer_ids;
};

}  // namespace reprise::engine
