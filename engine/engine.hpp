// Engine: the workflow service behind reprise-server and embedded mode.
//
// Every method mirrors an RPC of reprise.v1.WorkflowService and answers
// through a callback, so a caller (the gRPC adapter, the in-process
// connection) never parks a thread: polls wait in Matching, history
// long-polls wait in a watcher list, and commits wait in the store's group
// commit. A reply is sent only after the transition it reports is committed,
// except a poll's: the task's start is held in memory and committed with the
// run's next transition (held_starts.hpp).
//
// Inside, each operation on an execution is one MutableState transition run
// through the ExecutionSerializer (one in flight per execution) on a small
// executor; after the commit, the tasks it created go to Matching, its timers
// to the timer loop, and history watchers are woken.
//
// Thread safety: all methods may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <type_traits>
#include <utility>

#include "engine/admission.hpp"
#include "engine/claim_check.hpp"
#include "engine/deadline_scheduler.hpp"
#include "engine/engine_metrics.hpp"
#include "engine/engine_runtime.hpp"
#include "engine/execution/mutable_state.hpp"
#include "engine/execution_cache.hpp"
#include "engine/execution_serializer.hpp"
#include "engine/executor.hpp"
#include "engine/held_starts.hpp"
#include "engine/matching/matching.hpp"
#include "engine/namespace_registry.hpp"
#include "engine/store/store.hpp"
#include "engine/task_queue_peers.hpp"
#include "engine/transfer_peers.hpp"

namespace reprise::engine {

template <typename T>
using Reply = std::function<void(Result<T>)>;

// Lets a poll's caller end it early (its client disconnected): a parked poll
// answers empty at once, and a task matched after cancel() goes back to the
// queue instead of to a caller that is gone.
class PollTicket {
 public:
  void cancel() {
    std::function<void()> action;
    {
      std::lock_guard lock(mu_);
      canceled_ = true;
      action = std::move(on_cancel_);
    }
    if (action) action();
  }
  bool canceled() const {
    std::lock_guard lock(mu_);
    return canceled_;
  }
  // What cancel() does for the poll now parked; runs at once if canceled.
  void on_cancel(std::function<void()> action) {
    {
      std::lock_guard lock(mu_);
      if (!canceled_) {
        on_cancel_ = std::move(action);
        return;
      }
    }
    action();
  }

 private:
  mutable std::mutex mu_;
  bool canceled_ = false;
  std::function<void()> on_cancel_;
};

struct EngineOptions {
  EngineConfig config;
  std::chrono::milliseconds poll_timeout{60'000};  // long-polls return empty after this
  // A history long-poll waits at most this long, whatever the client asks.
  std::chrono::milliseconds max_history_wait{60'000};
  int executor_threads = 2;
  // Threads that run the synchronous store reads of requests, so a caller's
  // thread (gRPC's) never waits on SQLite. As many as the store has read
  // connections.
  int read_threads = 4;
  // Threads that run requests' claim-check work (uploads of large payloads,
  // which wait for the store's writer, and reference checks): apart from
  // the reads, so uploads held up by a busy or full disk never queue
  // describe, history, query or a worker's page reads behind them.
  int upload_threads = 2;
  // Back-pressure (admission.hpp, docs/engine.md): requests that change an
  // execution, admitted and not yet answered, server-wide; and requests
  // waiting behind the running one of a single execution. Beyond either a
  // request gets RESOURCE_EXHAUSTED at once, and the SDK retries it.
  size_t max_pending_requests = 10'000;
  size_t max_waiting_per_execution = 256;
  // Queries waiting for a worker's answer, server-wide. They have their own
  // bound, not a max_pending_requests slot, so queries to a workflow no
  // worker serves cannot crowd out the requests that move workflows on.
  // Beyond it a query gets RESOURCE_EXHAUSTED (retryable).
  size_t max_pending_queries = 1'000;
  // A query waits at most this long for its answer, whatever timeout the
  // client gives (a longer one is cut to this).
  std::chrono::milliseconds max_query_wait{60'000};
  const Clock* clock = nullptr;  // defaults to the system clock
  uint64_t random_seed = 0;      // run ids and the query epoch; 0 = from std::random_device
  // A driver's threads and deadlines (engine_runtime.hpp): the simulator's.
  // nullptr: the engine's own threads (executor_threads, read_threads).
  const EngineRuntime* runtime = nullptr;
  ClaimCheckOptions claim_check;
  // Unreferenced blobs older than the grace period are removed this often
  // (blob_gc.cpp); the grace covers an upload whose referencing request has
  // not come yet.
  std::chrono::seconds blob_gc_interval{600};
  std::chrono::seconds blob_gc_grace{3600};
  // Retention (retention.cpp, docs/engine.md): a run closed longer ago than
  // this is deleted with its history, visibility row, task and timer rows
  // and blob references, and its id's current-run row if that names it.
  // Zero keeps every run forever. The default of every namespace that sets
  // no retention of its own.
  std::chrono::seconds retention{7 * 24 * 3600};
  // How often the sweeper looks (real time; the cutoff comes from `clock`),
  // and how many runs it deletes at a time: each its own serialized
  // transition, which the store's writer commits in one or a few short
  // transactions before the next batch is looked up.
  std::chrono::milliseconds retention_sweep_interval{60'000};
  int retention_batch = 100;
  // Where the engine counts what it does (engine_metrics.hpp); nullptr
  // counts nothing. Outlives the engine.
  metrics::Registry* metrics = nullptr;
  // A task a poller takes is started in memory (held_starts.hpp) and
  // committed with the run's next transition, or on its own after at most
  // this long (sooner when its start-to-close or heartbeat timeout is due).
  // Zero commits every start before the task is handed out.
  std::chrono::milliseconds max_held_start{2000};
  // How many executions' records the engine keeps from its own commits
  // (execution_cache.hpp), so the next transition of a run does not read
  // it back; the least recently used go first. Zero reads every one.
  size_t execution_cache_entries = 1024;
  // And at most this much of their state (a state larger is not kept).
  size_t execution_cache_bytes = 64 << 20;
  // In a cluster: how a transfer task reaches the node that serves its
  // target's shard (transfer_peers.hpp). nullptr: such a task is retried
  // until this node serves both shards.
  std::shared_ptr<TransferPeers> transfer_peers;
  // In a cluster: how tasks reach the owners of their queues, and matched
  // tasks the nodes that serve their shards (task_queue_peers.hpp).
  // nullptr: every task stays in this node's queues.
  std::shared_ptr<TaskQueuePeers> task_queue_peers;
};

// What one pass of the retention sweeper did.
struct RetentionPass {
  int64_t deleted = 0;
  // Left for the next pass: a child whose parent has not recorded its close
  // yet, or a delete that failed (logged).
  int64_t postponed = 0;
};

class Engine {
 public:
  // Rebuilds the task queues from the store and starts the timer loop.
  static Result<std::unique_ptr<Engine>> start(Store& store, EngineOptions options);
  // Stops taking work: parked polls and history waits answer empty, new calls
  // answer UNAVAILABLE, and it returns once every operation in flight has
  // answered. Idempotent; the destructor calls it.
  void shutdown();
  ~Engine();

  // Client side.
  void start_workflow(v1::StartWorkflowRequest request, Reply<v1::StartWorkflowResponse> reply);
  void signal_workflow(v1::SignalWorkflowRequest request, Reply<v1::SignalWorkflowResponse> reply);
  // Signals the running run of the workflow id, or starts one with the signal
  // as its first event. `started` says which.
  void signal_with_start(v1::SignalWithStartRequest request, Reply<v1::StartWorkflowResponse> reply);
  void request_cancel_workflow(v1::RequestCancelWorkflowRequest request,
                               Reply<v1::RequestCancelWorkflowResponse> reply);
  void terminate_workflow(v1::TerminateWorkflowRequest request, Reply<v1::TerminateWorkflowResponse> reply);
  // Deletes the run (the current run when no run id is given): a running
  // run is terminated first, as Temporal does; then its history, visibility
  // row, tasks, timers and blob references go, and the id's current-run row
  // if it names this run, so the id can start again (retention.cpp).
  void delete_workflow_execution(v1::DeleteWorkflowExecutionRequest request,
                                 Reply<v1::DeleteWorkflowExecutionResponse> reply);
  // Asks a worker to run the workflow's query handler on its current state;
  // DEADLINE_EXCEEDED when no worker answers in time.
  void query_workflow(v1::QueryWorkflowRequest request, Reply<v1::QueryWorkflowResponse> reply);
  void describe_workflow(v1::DescribeWorkflowRequest request, Reply<v1::DescribeWorkflowResponse> reply);
  // With wait_new_event, a long-poll like the task polls (and `ticket` ends
  // it early in the same way).
  void get_history(v1::GetHistoryRequest request, Reply<v1::GetHistoryResponse> reply,
                   std::shared_ptr<PollTicket> ticket = nullptr);
  void list_workflows(v1::ListWorkflowsRequest request, Reply<v1::ListWorkflowsResponse> reply);

  // Worker side. Polls answer an empty response (no task token) on timeout,
  // or at once after `ticket` is canceled (the poller went away).
  void poll_workflow_task(v1::PollWorkflowTaskRequest request, Reply<v1::PollWorkflowTaskResponse> reply,
                          std::shared_ptr<PollTicket> ticket = nullptr);
  void complete_workflow_task(v1::CompleteWorkflowTaskRequest request, Reply<v1::CompleteWorkflowTaskResponse> reply);
  void fail_workflow_task(v1::FailWorkflowTaskRequest request, Reply<v1::FailWorkflowTaskResponse> reply);
  void poll_activity_task(v1::PollActivityTaskRequest request, Reply<v1::PollActivityTaskResponse> reply,
                          std::shared_ptr<PollTicket> ticket = nullptr);
  void heartbeat_activity(v1::HeartbeatActivityRequest request, Reply<v1::HeartbeatActivityResponse> reply);
  void complete_activity(v1::CompleteActivityRequest request, Reply<v1::CompleteActivityResponse> reply);
  void fail_activity(v1::FailActivityRequest request, Reply<v1::FailActivityResponse> reply);
  void report_activity_canceled(v1::ReportActivityCanceledRequest request,
                                Reply<v1::ReportActivityCanceledResponse> reply);

  // Namespaces (namespace_requests.cpp). Registering and updating wait for
  // the store's commit; describe and list answer from memory.
  void register_namespace(v1::RegisterNamespaceRequest request, Reply<v1::RegisterNamespaceResponse> reply);
  void describe_namespace(v1::DescribeNamespaceRequest request, Reply<v1::DescribeNamespaceResponse> reply);
  void list_namespaces(v1::ListNamespacesRequest request, Reply<v1::ListNamespacesResponse> reply);
  void update_namespace(v1::UpdateNamespaceRequest request, Reply<v1::UpdateNamespaceResponse> reply);

  // "" becomes the default namespace; a namespace not registered is
  // NOT_FOUND, naming it.
  Status check_namespace(std::string& namespace_id) const { return namespaces_->check(namespace_id); }
  // The namespace of the execution a task token names (task and query
  // tokens alike); INVALID_ARGUMENT for a token this server did not sign.
  Result<std::string> task_namespace(const std::string& task_token) const;

  // Cluster (shard_changes.cpp, docs/cluster.md): the address of the node
  // that serves the shard of `workflow_id`, or of the execution a task token
  // names, when that is another node ("" when this node serves it, no live
  // node holds it, or the store has no cluster).
  std::string owner_address(std::string namespace_id, const std::string& workflow_id) const;
  std::string token_owner_address(const std::string& task_token) const;
  // Task queues in a cluster (task_queue_ownership.cpp, docs/cluster.md,
  // "Task queues"): the address of the node that owns a worker's queue,
  // where its polls go ("" when it is this node, or the store has no
  // cluster).
  std::string queue_owner_address(std::string namespace_id, TaskKind kind, const std::string& queue) const;
  // A worker completed a workflow task asking for its sticky queue `queue`
  // through the node at `address` ("": this node): that queue lives there,
  // and this node's sticky tasks for it are handed to it.
  void note_sticky_home(const std::string& queue, const std::string& address);
  // The owner's side: tasks another node hands to this node's queues.
  // PERMISSION_DENIED unless signed with the cluster's task-token key.
  void add_queued_tasks(const internal::QueuedTasks& tasks, Reply<internal::QueuedTasksAdded> reply);
  // The shard's side: start a task of this node's shard that the queue's
  // owner matched with a poll (worker_tasks.cpp); `stale` when the task was
  // taken already; UNAVAILABLE when this node does not serve its shard.
  void start_queued_task(internal::StartTaskRequest request, Reply<internal::StartedTask> reply);
  // The target side of a transfer task another node of the cluster runs
  // (remote_transfer.cpp, docs/cluster.md): applied here if this node
  // serves the target's shard, else UNAVAILABLE. PERMISSION_DENIED unless
  // its credential was signed with the cluster's task-token key.
  void apply_remote_transfer(internal::RemoteTransfer request, Reply<internal::RemoteTransferOutcome> reply);

  // History long-polls parked right now (a gauge).
  size_t parked_history_waits();
  // Deadlines (long-poll and query timeouts, retry pauses) not yet due: what
  // waits hold on to (a gauge).
  size_t pending_deadlines() { return deadlines_.size(); }

  // "" while the server makes progress; otherwise why it cannot (its store
  // cannot write: a full disk), for describe and the health status.
  std::string server_problem() const { return store_.write_problem(); }
  // The store's counts of commits, syncs and checkpoints (GetStorageStats).
  StorageStats storage_stats() const { return store_.storage_stats(); }

  // Looks for due timers now (tests that move a ManualClock call this).
  void check_timers();
  // One retention pass now, over every run closed longer ago than its
  // namespace's retention period by the engine's clock; the sweeper thread
  // calls it every retention_sweep_interval. One pass at a time.
  Result<RetentionPass> sweep_retention();

  // Executions with task starts held in memory, not yet committed (a
  // gauge; held_starts.hpp).
  size_t held_starts() const { return held_starts_.size(); }
  // What the execution cache holds, its hits and misses (for /metrics).
  ExecutionCache::Stats execution_cache_stats() const { return execution_cache_.stats(); }
  // Tasks queued for workers and not yet handed out (time skipping waits
  // for none before it moves a ManualClock).
  size_t queued_tasks() const { return matching_.total_backlog(); }
  // Each queue's waiting tasks and parked polls (a gauge per queue). In a
  // cluster a task is counted on the node that serves its shard only, not
  // again as the copy its queue's owner holds (task_queue_ownership.cpp).
  std::vector<QueueLoad> queue_loads() const;
  // Nodes of the cluster this node saw live at its last lease round, itself
  // included: those task queues and shards are spread over (a gauge; 0
  // without a cluster).
  size_t cluster_live_nodes() const { return shards_ == nullptr ? 0 : shards_->live_nodes(); }
  // Requests that change an execution, admitted and not yet answered (a
  // gauge; at most max_pending_requests).
  size_t pending_requests() const { return admission_.in_flight(); }
  // Queries waiting for an answer (a gauge; at most max_pending_queries).
  size_t pending_queries() const { return query_admission_.in_flight(); }

 private:
  Engine(Store& store, EngineOptions options);

  // An operation on one execution runs as one serialized transition: `op`
  // changes the loaded MutableState and returns its outcome, or an error and
  // nothing is committed. `then` gets that Result once the change is
  // committed (or the commit's error), on the executor: the one way an
  // operation's result leaves. An op with nothing to report returns Done.
  //   `extra` adds rows to remove: the task or timer row that led here, also
  //   removed when the execution is gone or the op found the row stale.
  //   With kSalvage, a state that does not parse is replaced by an empty one
  //   (terminate: an operator must be able to end a damaged workflow).
  //   With kRequest, the transition waits in the execution's bounded queue
  //   (RESOURCE_EXHAUSTED when full); the engine's own work is bounded
  //   elsewhere and always waits its turn.
  struct Done {};
  static Result<Done> to_done(Status s) {
    if (!s) return s;
    return Done{};
  }
  enum class Unreadable { kFail, kSalvage };
  enum class Origin { kInternal, kRequest };
  //   With kStarts, an op that only started tasks is held in memory
  //   (held_starts.hpp) instead of committed, and `then` gets its outcome
  //   at once; the rows `extra` removes go when the hold is committed. An
  //   op that asked for it (MutableState::request_hold) is held whatever
  //   the Hold.
  enum class Hold { kNever, kStarts };
  using RowRemoval = std::function<void(Transition&)>;
  template <typename T>
  using Then = std::type_identity_t<std::function<void(Result<T>)>>;
  template <typename Op, typename T = typename std::invoke_result_t<Op&, MutableState&>::value_type>
  void transition(const ExecutionKey& key, Op op, RowRemoval extra, Then<T> then,
                  Unreadable unreadable = Unreadable::kFail, Origin origin = Origin::kInternal,
                  Hold hold = Hold::kNever, std::optional<TaskRecord> taken = std::nullopt) {
    auto [run, answer] = erase_outcome<T>(std::move(op), std::move(then));
    run_transition(key, std::move(run), std::move(extra), std::move(answer), unreadable, origin, hold,
                   std::move(taken));
  }
  // transition() on the run a client's request names; without a run id,
  // the current run, followed across continue-as-new.
  template <typename Op, typename T = typename std::invoke_result_t<Op&, MutableState&>::value_type>
  void transition_named(const std::string& namespace_id, const v1::WorkflowExecution& execution, Op op, Then<T> then,
                        Unreadable unreadable = Unreadable::kFail, Origin origin = Origin::kRequest) {
    auto [run, answer] = erase_outcome<T>(std::move(op), std::move(then));
    run_transition_named(namespace_id, execution, std::move(run), std::move(answer), unreadable, origin, 0);
  }
  // The transition machinery works on an op's Status; the outcome rides
  // beside it from the op (before the commit) to `then` (after it).
  using StatusOp = std::function<Status(MutableState&)>;
  using StatusThen = std::function<void(Status)>;
  template <typename T, typename Op>
  static std::pair<StatusOp, StatusThen> erase_outcome(Op op, std::function<void(Result<T>)> then) {
    auto outcome = std::make_shared<std::optional<T>>();
    StatusOp run = [op = std::move(op), outcome](MutableState& ms) {
      Result<T> r = op(ms);
      if (!r) return r.status();
      *outcome = std::move(r).value();
      return Status::ok();
    };
    StatusThen answer = [outcome, then = std::move(then)](Status s) {
      if (!s) return then(std::move(s));
      then(std::move(**outcome));
    };
    return {std::move(run), std::move(answer)};
  }
  // `taken`: with Hold::kStarts, the task the op starts, which goes back
  // to matching if its held start is ever dropped uncommitted.
  void run_transition(const ExecutionKey& key, StatusOp op, RowRemoval extra, StatusThen then, Unreadable unreadable,
                      Origin origin, Hold hold = Hold::kNever, std::optional<TaskRecord> taken = std::nullopt);
  // The op's change on top of the stored record, and of the change held
  // for it if there is one (nullptr: none, or one that no longer fits the
  // record, which is dropped and its tasks handed back to matching).
  Result<MutableState> load_state(const ExecutionRecord& record, Unreadable unreadable,
                                  std::optional<HeldStarts::Entry>& held);
  // Holds `ms`, whose op only started tasks (or asked to be held with an
  // activity result), instead of committing it.
  void hold_started(MutableState&& ms, std::optional<HeldStarts::Entry> held, RowRemoval& extra,
                    std::optional<TaskRecord> taken);
  // The execution's record: from the cache when this engine committed it
  // last, else from the store.
  Result<ExecutionRecord> read_execution(const ExecutionKey& key);
  // Store::read_history, answered from the execution cache where it
  // holds the batches asked for (on the same terms as read_execution;
  // `known_last` as ExecutionCache::history takes it).
  Result<std::vector<HistoryBatch>> read_history(const ExecutionKey& key, int64_t from_event_id, int max_batches,
                                                 int64_t known_last);
  // Commits the change held for `key`, if any (the timer loop, when due).
  void flush_held(const ExecutionKey& key);
  void run_transition_named(const std::string& namespace_id, const v1::WorkflowExecution& execution, StatusOp op,
                            StatusThen then, Unreadable unreadable, Origin origin, int hops);
  // Admits a request that will change an execution: false (and `reply`
  // answered RESOURCE_EXHAUSTED) when max_pending_requests are in flight;
  // otherwise `reply` holds the slot until it has answered. admit_to() is
  // the same at another door (queries: query_admission_).
  template <typename T>
  bool admit(Reply<T>& reply) {
    return admit_to(admission_, "requests in flight", "--max-pending-requests", reply);
  }
  template <typename T>
  bool admit_to(RequestAdmission& door, const char* what, const char* flag, Reply<T>& reply) {
    RequestAdmission::Slot slot = door.try_admit();
    if (!slot) {
      reply(Status::busy("the server has " + std::to_string(door.limit()) + " " + what + ", its limit (" + flag +
                         "); retry later"));
      return false;
    }
    reply = [slot = std::move(slot), inner = std::move(reply)](Result<T> r) { inner(std::move(r)); };
    return true;
  }
  Status execution_busy(const ExecutionKey& key) const;
  void commit(Transition t, std::function<void(Result<CommitResult>)> then);
  void after_commit(const std::vector<TaskRecord>& tasks, const std::vector<TimePoint>& timers,
                    const std::vector<ExecutionKey>& changed, const CommitResult& result);
  // After a commit that failed in doubt (commit_in_doubt.cpp).
  void after_commit_in_doubt(int64_t committed_before, bool added_tasks, const std::vector<ExecutionKey>& changed);
  void reload_tasks_in_doubt();

  // An operation in flight: shutdown() waits until every one has ended. It
  // ends when the last closure holding its handle is destroyed, or at end()
  // for one that answers once while copies of its callbacks linger (in a
  // watcher list, a poll ticket); so no path can forget to end it, end it
  // twice, or end it before work it posted has run.
  class Operation {
   public:
    explicit Operation(Engine& engine) : engine_(&engine) {}
    Operation(const Operation&) = delete;
    Operation& operator=(const Operation&) = delete;
    ~Operation() { end(); }
    void end() {
      if (Engine* engine = engine_.exchange(nullptr)) engine->end_op();
    }

   private:
    std::atomic<Engine*> engine_;
  };
  using OperationRef = std::shared_ptr<Operation>;
  // A new operation; nullptr once the engine is closing.
  OperationRef begin_op();
  // An operation that finishes one already counted (a commit's callback):
  // counted even while the engine is closing.
  OperationRef nested_op();
  void end_op();
  bool closing();
  // Runs `work` on `pool` (read_pool_, upload_pool_), which may wait on
  // SQLite, so the caller's thread (a gRPC callback thread) never does;
  // `refuse` gets UNAVAILABLE instead once the engine is closing.
  template <typename Refuse>
  void on_pool(TaskRunner& pool, const Refuse& refuse, std::function<void()> work) {
    OperationRef in_flight = begin_op();
    if (!in_flight) return refuse(Status::unavailable("the server is shutting down"));
    pool.post([in_flight, work = std::move(work)] { work(); });
  }
  template <typename Refuse>
  void on_read_pool(const Refuse& refuse, std::function<void()> work) {
    on_pool(read_pool_, refuse, std::move(work));
  }
  // Where a request that reads the store runs: the upload pool when it has
  // claim-check work to do, else the read pool.
  TaskRunner& pool_for(const google::protobuf::Message& request) {
    return claim_check_.touches_blob_store(request) ? upload_pool_ : read_pool_;
  }
  // Claim-checks `request` (claim_check.hpp) in `namespace_id`, then runs `then` with it and
  // whether it holds references; on the upload pool when that touches the
  // blob store (an upload, a reference to look up), inline otherwise.
  template <typename Req, typename T>
  void after_offload(const std::string& namespace_id, Req request, const Reply<T>& reply,
                     std::function<void(Req&, bool)> then) {
    auto run = [this, namespace_id, reply, then = std::move(then)](Req& r) {
      Result<bool> refs = claim_check_.offload(r, namespace_id);
      if (!refs) return reply(refs.status());
      then(r, *refs);
    };
    if (!claim_check_.touches_blob_store(request)) return run(request);
    on_pool(upload_pool_, reply, [run, request = std::move(request)]() mutable { run(request); });
  }
  // The halves of requests that read the store, run on the read pool (or
  // the upload pool, for a signal or terminate with claim-check work).
  void signal_blocking(v1::SignalWorkflowRequest request, Reply<v1::SignalWorkflowResponse> reply);
  void cancel_blocking(std::string namespace_id, v1::RequestCancelWorkflowRequest request,
                       Reply<v1::RequestCancelWorkflowResponse> reply);
  void terminate_blocking(v1::TerminateWorkflowRequest request, Reply<v1::TerminateWorkflowResponse> reply);
  void delete_blocking(std::string namespace_id, v1::DeleteWorkflowExecutionRequest request,
                       Reply<v1::DeleteWorkflowExecutionResponse> reply);
  void describe_blocking(v1::DescribeWorkflowRequest request, Reply<v1::DescribeWorkflowResponse> reply);
  void list_blocking(VisibilityQuery query, Reply<v1::ListWorkflowsResponse> reply);
  void query_blocking(v1::QueryWorkflowRequest request, Reply<v1::QueryWorkflowResponse> reply);
  void history_blocking(std::string namespace_id, v1::GetHistoryRequest request, Reply<v1::GetHistoryResponse> reply,
                        std::shared_ptr<PollTicket> ticket);
  // Starts a run (StartWorkflow, SignalWithStart) under the workflow id's
  // serializer; with `signal`, a running run is signaled instead.
  // `lineage`: a child started for a parent another node serves.
  void start_run(std::string namespace_id, v1::StartWorkflowRequest request,
                 std::optional<v1::SignalWorkflowRequest> signal, Reply<v1::StartWorkflowResponse> reply,
                 const RunLineage& lineage = {});
  Result<ExecutionKey> resolve(const std::string& namespace_id, const v1::WorkflowExecution& execution);
  // An execution named by a request (empty run id: the current run), read
  // and parsed: what describe and query start from.
  struct LoadedExecution {
    ExecutionKey key;
    ExecutionRecord record;
    internal::ExecutionState state;
  };
  Result<LoadedExecution> load_execution(std::string namespace_id, const v1::WorkflowExecution& execution);
  std::string new_run_id();
  Deadlines::SteadyTime poll_deadline() const;

  // Polls of both task kinds: take a task, record it started (dropping stale
  // rows and polling on), then fill in what the poller needs from history.
  template <typename Response>
  using StartTask =
      std::function<Result<Applied>(MutableState&, const internal::TaskPayload&, const std::string&, Response&)>;
  template <typename Response>
  using FillTask = std::function<Status(const TaskRecord&, const internal::TaskPayload&, Response&)>;
  struct PollSpec {
    QueueKey queue;
    std::string identity;
    Deadlines::SteadyTime deadline;
    std::shared_ptr<PollTicket> ticket;
    int page_events = 0;  // workflow and query tasks: events in the history page they come with
    bool sticky = false;  // a worker's sticky queue: it lives on this node, whoever owns its name
  };
  template <typename Response>
  void poll_task(PollSpec spec, Reply<Response> reply, StartTask<Response> start, FillTask<Response> fill);
  // A poll matched `task`: record it started (a task of a shard another
  // node serves: ask that node), then answer the poller. `again` polls on
  // (a stale task).
  template <typename Response>
  void start_task(TaskRecord task, const PollSpec& spec, Reply<Response> reply, StartTask<Response> start,
                  FillTask<Response> fill, std::function<void()> again);
  template <typename Response>
  void start_elsewhere(TaskRecord task, const PollSpec& spec, Reply<Response> reply, std::function<void()> again);
  // How each kind of task is started and filled in, for a poll here or
  // another node's.
  static StartTask<v1::PollWorkflowTaskResponse> workflow_task_start();
  FillTask<v1::PollWorkflowTaskResponse> workflow_task_fill(int page_events);
  static StartTask<v1::PollActivityTaskResponse> activity_task_start();
  FillTask<v1::PollActivityTaskResponse> activity_task_fill();
  // A worker's report on a task it holds: decode the token, apply `op` to
  // the execution it names, and once that is committed answer what
  // `respond` makes of the op's outcome.
  template <typename Response, typename T>
  void on_task_token(const std::string& token, bool claim_checks,
                     std::function<Result<T>(MutableState&, const internal::TaskToken&)> op,
                     std::function<Result<Response>(T)> respond, Reply<Response> reply);
  // Up to `max_events` events from `first_event_id` on into `out`;
  // `next_event_id` is set past the last. The caller knows the events up
  // to `known_last` are stored (0: none), so a cache a commit behind
  // cannot make the history look shorter (ExecutionCache::history).
  Status fill_history(const ExecutionKey& key, int64_t first_event_id, int max_events, v1::History& out,
                      int64_t& next_event_id, int64_t known_last);
  // The first page of a started workflow task's history (from its
  // previous task on for a sticky one), read once it is committed.
  Status fill_workflow_task(const ExecutionKey& execution, bool sticky, int page_events,
                            v1::PollWorkflowTaskResponse& out);
  // An eager workflow task, committed, with its history: what the reply
  // carries; nothing when none was started or its history cannot be read.
  std::optional<v1::PollWorkflowTaskResponse> hand_out_eager(std::optional<MutableState::EagerWorkflowTask> eager);
  // CompleteActivityRequest.hold_with_workflow_task: the transition that
  // recorded the result and started `eager` is held instead of committed,
  // when it may be (--max-held-start is not 0, and it only_started_tasks()
  // besides the result), and `eager` gets its history now, with the held
  // events as not yet written. Otherwise nothing changes.
  void hold_result_with(MutableState& ms, MutableState::EagerWorkflowTask& eager);
  // Events in a page of history: what the reader asked for, else 1000.
  static int history_page_size(int32_t asked);
  // The page of a task's history that `from` names: at most `max_events`
  // written events up to from.last_event_id(), then, once that one is in,
  // the events the task was shown unwritten; `next_page_token` ("" after
  // the last page) names the next. Tasks come with their first page and the
  // worker reads the rest through GetHistory, so no answer holds a whole
  // long history.
  Status task_history_page(const ExecutionKey& key, internal::HistoryPageToken from, int max_events, v1::History& out,
                           std::string& next_page_token);
  // StartWorkflowRequest.wait_for_result: `reply`, answered once the started
  // (or found) run's chain has closed, with its close event, through the
  // history long-poll (follow_runs); without the event when the wait ends
  // first, fails, or the start handed out an eager task. `reply` itself
  // without wait_for_result.
  Reply<v1::StartWorkflowResponse> answer_with_result(const v1::StartWorkflowRequest& request,
                                                      Reply<v1::StartWorkflowResponse> reply);
  uint64_t watch(const ExecutionKey& key, std::function<void()> wake);
  void unwatch(const ExecutionKey& key, uint64_t id);
  void wake_watchers(const ExecutionKey& key);

  // Queries (queries.cpp): in-memory tasks on the workflow's queue, answered
  // through the task token they carry.
  struct PendingQuery {
    OperationRef op;  // ends when the query is answered, times out or is dropped
    ExecutionKey execution;
    v1::WorkflowQuery query;
    Reply<v1::QueryWorkflowResponse> reply;
    Deadlines::Id deadline = 0;
    // While the run's first workflow task has not completed: the watch that
    // looks again at each change of the run (0 once the query is on the queue).
    uint64_t first_task_watch = 0;
  };
  // Ids for tasks that live only in matching (query and sticky tasks):
  // negative, so they never meet a stored task's id; from a random start
  // per process, so those of two nodes do not meet in a queue's owner.
  int64_t memory_task_id() { return -next_memory_task_id_.fetch_add(1); }
  // After a commit: the sticky tasks it made go to their workers' queues,
  // and leave them once the fallback to the normal queue has happened.
  void add_sticky_tasks(const MutableState& ms);
  // Takes a pending query out to answer it; nothing if it was answered or
  // timed out already.
  std::optional<PendingQuery> take_query(uint64_t query_id);
  // The pending query a worker's token names: its id, issued by this
  // process (the epoch), for the execution the token names.
  std::optional<PendingQuery> take_query(const internal::TaskToken& token);
  // Puts query `id` on the run's queue once the run has a completed workflow
  // task (or has closed), looking again at each change of the run.
  void dispatch_query_after_first_task(uint64_t id, int64_t task_id, const ExecutionKey& key, const std::string& queue);
  // A poller took query task `task`: hand it the query and the history.
  void start_query_task(const TaskRecord& task, const internal::TaskPayload& payload, int page_events,
                        Reply<v1::PollWorkflowTaskResponse> reply, std::function<void()> poll_again);
  // The token of a query task, or nothing for any other token.
  std::optional<internal::TaskToken> query_token(const std::string& token) const;
  // A worker answered (or failed) the query its token names; NOT_FOUND when
  // no such query is waiting here (answered, timed out, or issued by the
  // server before a restart).
  Status answer_query(const internal::TaskToken& token, const v1::CompleteWorkflowTaskRequest* completed,
                      const v1::FailWorkflowTaskRequest* failed);

  // Transfer tasks (transfer.cpp).
  // `attempt` counts the runs of this task since the engine started.
  void run_transfer(TaskRecord task, int attempt = 1);
  void retry_transfer(TaskRecord task, int attempt, const Status& why);
  // The parent-close policy a transfer task carries, applied to `child`
  // and, if that run had closed into the next of its chain, to that run;
  // `extra` removes the task's row with it (when the row is this node's).
  // `done` gets OK once applied or found needless.
  void apply_parent_close_policy(ExecutionKey child, internal::TransferTask transfer, RowRemoval extra,
                                 std::function<void(Status)> done);
  void drop_task(int64_t task_id);
  // A signal or cancel request a workflow sent (external_delivery.cpp).
  void deliver_external(TaskRecord task, const internal::TransferTask& transfer, int attempt);
  // The target's side of it: `e` (the sender's initiated event) applied to
  // its target here; `then` gets the cause to record (NOT_FOUND for a target
  // missing or closed) or an error to retry on.
  void deliver_external_here(const ExecutionKey& sender, const v1::HistoryEvent& e, const std::string& request_id,
                             std::function<void(Result<v1::ExternalFailureCause>)> then);
  // Transfer tasks whose target another node serves (remote_transfer.cpp).
  // Whether `key`'s shard is served by another node (or by none now).
  bool remote_target(const ExecutionKey& key) const { return shards_ != nullptr && !shards_->serves(key); }
  // The request for the target side of `task`, signed for its execution.
  internal::RemoteTransfer remote_request(const TaskRecord& task, const internal::TransferTask& transfer) const;
  // Sends `request` to the node that serves `target`, then `then` gets the
  // target's outcome on the executor; any failure retries the task.
  void send_transfer(const TaskRecord& task, int attempt, const ExecutionKey& target,
                     const internal::RemoteTransfer& request,
                     std::function<void(const internal::RemoteTransferOutcome&)> then);
  void start_child_remotely(TaskRecord task, const internal::TransferTask& transfer, const v1::HistoryEvent& initiated,
                            int attempt);
  void apply_transfer_here(internal::RemoteTransfer request, Reply<internal::RemoteTransferOutcome> reply);
  // Where a committed or rebuilt task goes: a worker's queue, or the engine.
  void dispatch(TaskRecord task);
  // A worker's task of this node's shards, into its queue: this node's
  // matching (the shard's record of what is pending), and in a cluster the
  // queue's owner too (task_queue_ownership.cpp).
  void offer(TaskRecord task);
  // Hands `tasks` to the owners of their queues (or, for a sticky task, to
  // its queue's node); a failed hand-over is retried while the task waits.
  void push_to_owners(const std::vector<TaskRecord>& tasks, int attempt = 1);
  // Where `task`'s queue lives: an address, "" for this node, nothing when
  // unknown (a sticky queue whose node this node has not heard of).
  std::optional<std::string> queue_home(const TaskRecord& task) const;
  // A copy of another node's task whose start failed: back in its queue
  // after a moment (no poll meets it again at once).
  void set_aside(TaskRecord task);
  // The live nodes changed, or a node took its shards back: the tasks of
  // queues whose owner changed, or whose owner took its shards back (it
  // restarted, its copies lost), go to their owners; on a change of live
  // nodes this node also lets go of the queues it no longer owns.
  void queue_owners_changed(const MembersChange& change);
  // What AddTasks and StartTask carry between nodes: a token signed with
  // the cluster's task-token key naming kClusterCredentialName.
  static constexpr const char* kClusterCredentialName = "reprise.internal.task-queues";
  std::string cluster_credential() const;
  // Cluster (shard_changes.cpp): whether this node serves `key`'s shard
  // now; what it does when it gains shards (loads their tasks) and loses
  // them (drops their queued tasks and held starts).
  bool serves(const ExecutionKey& key) const { return shards_ == nullptr || shards_->serves(key); }
  // The refusal of an op on `key` when this node does not serve its shard
  // (retryable: the caller sends it again and reaches the shard's node).
  Status not_served(const ExecutionKey& key) const;
  Status gain_shards(const ShardSet& gained);
  // Loads the task rows with ids above `after` and dispatches those
  // `wanted`; how many.
  Result<int64_t> reload_tasks(int64_t after, const std::function<bool(const TaskRecord&)>& wanted);
  void lose_shards(const ShardSet& lost);
  bool in_shards(const ExecutionKey& key, const ShardSet& shards) const;

  // Retention (retention.cpp). Deletes a closed run under its id's and its
  // own serializer (the order start_run takes them in), so no transition of
  // the run and no start of the id runs meanwhile.
  enum class DeleteCause { kRequest, kRetention };
  enum class Deleted { kYes, kParentNotTold };
  void delete_closed_run(const ExecutionKey& key, DeleteCause cause, std::function<void(Result<Deleted>)> then);
  // An explicit delete, retried while the parent has not yet recorded the
  // run's close.
  void delete_requested_run(ExecutionKey key, bool terminated, int attempt,
                            Reply<v1::DeleteWorkflowExecutionResponse> reply);
  Result<Deleted> check_deletable(const ExecutionKey& key, DeleteCause cause);
  // One namespace's part of a retention pass.
  Result<RetentionPass> sweep_namespace(const std::string& namespace_id, std::chrono::seconds retention);
  void start_retention();
  void stop_retention();
  void retention_loop();

  void timer_loop();
  // Wakes the timer loop for a timer (or held start) due at `due`, unless
  // the loop sleeps no later than that anyway (every commit that adds a
  // timer would wake it otherwise, for a look that finds nothing due).
  void check_timers_due(TimePoint due);
  // One look at the timer table: fires the due timers not in flight.
  struct TimerLook {
    bool due_read = false;  // the due rows could be read
    size_t due = 0;
    size_t launched = 0;            // of those, not in flight already
    std::optional<TimePoint> next;  // when the earliest row is due
  };
  TimerLook fire_due_timers();
  // How long the loop sleeps after `look` unless asked to look again.
  std::chrono::milliseconds timer_wait(const TimerLook& look) const;
  // With an EngineRuntime the loop is stepped: a pass is a job on the
  // executor, its sleep a deadline (timer_loop.cpp).
  void post_timer_pass();
  void stepped_timer_pass();
  // Blob garbage collection (blob_gc.cpp), on a thread of its own.
  void start_blob_gc();
  void stop_blob_gc();
  void blob_gc_loop();
  void collect_blob_garbage();
  void fire(TimerRecord timer);
  // A timer failed for a reason a retry will not fix: log it and move its
  // row back by a growing delay.
  void postpone_timer(TimerRecord timer, internal::TimerTask task, const Status& error);
  // The timer is out of flight; with `look_again`, the loop looks for more
  // due timers at once.
  void finish_timer(int64_t timer_id, bool look_again);

  Store& store_;
  // The shards this node serves when its store is shared by a cluster
  // (shard_changes.cpp); nullptr: it serves every execution.
  ShardOwnership* shards_ = nullptr;
  EngineOptions options_;
  const EngineMetrics metrics_{options_.metrics};
  const Clock& clock_;
  // The engine's own threads, without an EngineRuntime; the references below
  // name these or the runtime's.
  std::unique_ptr<DeadlineScheduler> own_deadlines_;
  std::unique_ptr<Executor> own_executor_;
  std::unique_ptr<Executor> own_read_pool_;
  std::unique_ptr<Executor> own_upload_pool_;
  Deadlines& deadlines_;
  TaskRunner& executor_;
  TaskRunner& read_pool_;
  TaskRunner& upload_pool_;
  Matching matching_;
  ExecutionSerializer serializer_;
  HeldStarts held_starts_;
  ExecutionCache execution_cache_;
  // The next hand-out's start id: from a random start per process, so ids
  // of different processes do not meet.
  std::atomic<uint64_t> next_start_id_;
  RequestAdmission admission_;
  RequestAdmission query_admission_;  // queries waiting for an answer: a door of their own
  ClaimCheck claim_check_;
  std::unique_ptr<NamespaceRegistry> namespaces_;  // set by start()

  std::mutex random_mu_;
  std::mt19937_64 random_;

  std::atomic<int64_t> next_memory_task_id_{1};
  // The highest task id a commit got (written on the store's writer thread).
  std::atomic<int64_t> highest_committed_task_id_{0};
  // The reload of tasks after commits in doubt: one at a time; commits in
  // doubt while it runs make it run again.
  struct InDoubtReload {
    std::mutex mu;
    bool running = false;
    bool again = false;
    int64_t after = 0;  // task ids above this may be undispatched
  } in_doubt_reload_;
  mutable std::mutex sticky_homes_mu_;
  std::map<std::string, std::string> sticky_homes_;  // sticky queue -> its node's address ("" here)
  std::mutex query_mu_;
  std::map<uint64_t, PendingQuery> queries_;
  uint64_t next_query_id_ = 1;
  const uint64_t query_epoch_;  // random per process, never 0

  mutable std::mutex watch_mu_;
  std::map<ExecutionKey, std::map<uint64_t, std::function<void()>>> watchers_;
  uint64_t next_watch_id_ = 1;

  // Operations started and not yet answered; the destructor waits for none.
  std::mutex ops_mu_;
  std::condition_variable ops_cv_;
  int active_ops_ = 0;
  bool closing_ = false;

  std::mutex timer_mu_;
  std::condition_variable timer_cv_;
  std::set<int64_t> timers_in_flight_;
  bool timer_check_requested_ = false;
  // When the sleeping timer loop looks next by itself; unset while it looks.
  std::optional<TimePoint> timer_loop_wakes_at_;
  // The stepped loop (with an EngineRuntime): a pass is posted, or the
  // deadline that ends its sleep.
  bool timer_pass_posted_ = false;
  std::optional<Deadlines::Id> timer_sleep_;
  bool stopping_ = false;
  std::thread timer_thread_;

  std::mutex blob_gc_mu_;
  std::condition_variable blob_gc_cv_;
  bool blob_gc_stopping_ = false;
  std::thread blob_gc_thread_;

  std::mutex sweep_mu_;  // one retention pass at a time
  std::mutex retention_mu_;
  std::condition_variable retention_cv_;
  bool retention_stopping_ = false;
  std::thread retention_thread_;
};

}  // namespace reprise::engine
