// Task queues in a cluster (docs/cluster.md, "Task queues"), as Temporal's
// matching service owns them: each worker queue (namespace, kind, name) has
// one owner, the live node that rendezvous hashing over the live nodes gives
// it; a worker's poll is sent to the owner, and the node that serves a
// task's shard hands the task to the owner. When the owner matches a task of
// another node's shard with a poll, it asks that node to start it
// (start_queued_task, worker_tasks.cpp), which answers what the worker gets.
//
// The shard's node keeps every pending task of its shards in its own
// matching too: that is its record of what it has to hand over (the task
// table is the truth behind it, loaded when a shard is gained), and taking
// the task out of it is what makes one start the only one: a copy the owner
// matched after the task was started elsewhere is answered `stale`. So
// nothing depends on the owner's memory: when the live nodes change, every
// node hands the pending tasks of the queues whose owner changed to the new
// owner, and when a node takes its own shards back under a new range_id (it
// restarted within a lease, its copies lost) those of the queues it owns; an
// owner that died loses only copies. A sticky queue lives on the node its worker
// polls (the one it completed its last workflow task through).
//
// A node alone (no cluster) owns every queue: none of this runs.
#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "engine/queued_task.hpp"
#include "engine/store/rendezvous.hpp"

namespace reprise::engine {

namespace {

int64_t owner_key(const std::string& namespace_id, TaskKind kind, const std::string& queue) {
  return task_queue_key(namespace_id, static_cast<int>(kind), queue);
}

bool sticky_task(const TaskRecord& task) {
  if (task.kind != TaskKind::kWorkflowTask) return false;
  internal::TaskPayload payload;
  return payload.ParseFromString(task.payload) && payload.sticky();
}

// How long a handed-over copy of a task that lives in memory only (a query's,
// a sticky queue's) waits here: its own node drops the task itself by then.
constexpr std::chrono::seconds kMemoryTaskCopyMargin{1};
// A failed hand-over is retried after this, doubling up to kMaxPushBackoff.
constexpr std::chrono::milliseconds kPushBackoff{200};
constexpr std::chrono::milliseconds kMaxPushBackoff{5000};
// A copy whose start could not be asked for (its shard's node is unknown or
// did not answer) goes back to its queue after this.
constexpr std::chrono::milliseconds kSetAside{500};
// Sticky queues remembered; past this the memory starts over (a forgotten
// sticky queue's tasks go to the normal queue after its timeout).
constexpr size_t kMaxStickyHomes = 100'000;

}  // namespace

std::vector<QueueLoad> Engine::queue_loads() const {
  if (shards_ == nullptr) return matching_.loads();
  return matching_.loads([this](const TaskRecord& task) { return serves(task.execution); });
}

std::string Engine::cluster_credential() const {
  // Shaped as a task token must be to decode (a run id, an event id); it
  // names no execution.
  internal::TaskToken token;
  token.set_workflow_id(kClusterCredentialName);
  token.set_run_id(kClusterCredentialName);
  token.set_scheduled_event_id(1);
  return options_.config.task_tokens->encode(token);
}

std::string Engine::queue_owner_address(std::string namespace_id, TaskKind kind, const std::string& queue) const {
  if (shards_ == nullptr || options_.task_queue_peers == nullptr || !check_namespace(namespace_id).is_ok()) return "";
  return shards_->queue_owner_address(owner_key(namespace_id, kind, queue));
}

void Engine::note_sticky_home(const std::string& queue, const std::string& address) {
  if (shards_ == nullptr || queue.empty()) return;
  // Only a node of the cluster: the header is the caller's to write, and
  // this node's tasks, and its credential, go to the address named.
  if (!address.empty()) {
    const std::vector<std::string> peers = shards_->peer_addresses();
    if (std::find(peers.begin(), peers.end(), address) == peers.end()) return;
  }
  std::lock_guard lock(sticky_homes_mu_);
  if (sticky_homes_.size() >= kMaxStickyHomes) sticky_homes_.clear();
  sticky_homes_[queue] = address;
}

std::optional<std::string> Engine::queue_home(const TaskRecord& task) const {
  if (shards_ == nullptr || options_.task_queue_peers == nullptr) return "";
  if (sticky_task(task)) {
    std::lock_guard lock(sticky_homes_mu_);
    auto it = sticky_homes_.find(task.queue);
    if (it == sticky_homes_.end()) return std::nullopt;
    return it->second;
  }
  return shards_->queue_owner_address(owner_key(task.execution.namespace_id, task.kind, task.queue));
}

void Engine::set_aside(TaskRecord task) {
  deadlines_.schedule(deadlines_.now() + kSetAside, [this, task = std::move(task)]() mutable {
    matching_.add(std::move(task));  // ignored once matching has shut down
  });
}

void Engine::offer(TaskRecord task) {
  if (shards_ == nullptr) return matching_.add(std::move(task));  // a node alone owns every queue
  matching_.add(task);
  push_to_owners({std::move(task)});
}

void Engine::push_to_owners(const std::vector<TaskRecord>& tasks, int attempt) {
  if (shards_ == nullptr || options_.task_queue_peers == nullptr) return;
  std::map<std::string, std::vector<TaskRecord>> by_owner;
  for (const TaskRecord& task : tasks) {
    std::optional<std::string> home = queue_home(task);
    if (home && !home->empty()) by_owner[*home].push_back(task);
  }
  for (auto& [address, batch] : by_owner) {
    internal::QueuedTasks request;
    for (const TaskRecord& task : batch) *request.add_tasks() = queued_task(task);
    request.set_credential(cluster_credential());
    options_.task_queue_peers->add(
        address, request, [this, address = address, batch = std::move(batch), attempt](Status added) mutable {
          if (added) return;
          if (attempt == 1) {
            log::warn("tasks not handed to their queue's owner; retrying",
                      {{"address", address}, {"tasks", std::to_string(batch.size())}, {"error", added.to_string()}});
          }
          const auto delay = std::min(kMaxPushBackoff, kPushBackoff * (1 << std::min(attempt - 1, 5)));
          deadlines_.schedule(deadlines_.now() + delay, [this, batch = std::move(batch), attempt] {
            OperationRef in_flight = begin_op();
            if (!in_flight) return;
            executor_.post([this, batch, attempt, in_flight] {
              // Only what still waits here: a task started meanwhile is gone.
              std::vector<TaskRecord> waiting;
              for (const TaskRecord& task : batch) {
                if (serves(task.execution) && matching_.queued(task.task_id)) waiting.push_back(task);
              }
              push_to_owners(waiting, attempt + 1);
            });
          });
        });
  }
}

void Engine::add_queued_tasks(const internal::QueuedTasks& tasks, Reply<internal::QueuedTasksAdded> reply) {
  Result<internal::TaskToken> signed_by = options_.config.task_tokens->decode(tasks.credential());
  if (!signed_by || signed_by->workflow_id() != kClusterCredentialName) {
    return reply(Status::permission_denied("tasks not signed by a node of this cluster"));
  }
  std::vector<TaskRecord> added;
  for (const internal::QueuedTask& queued : tasks.tasks()) {
    Result<TaskRecord> task = task_record(queued);
    if (!task) return reply(task.status());
    added.push_back(std::move(*task));
  }
  for (TaskRecord& task : added) {
    const QueueKey key{task.execution.namespace_id, task.kind, task.queue};
    const int64_t id = task.task_id;
    matching_.add(std::move(task));
    if (id < 0) {
      deadlines_.schedule(deadlines_.now() + options_.max_query_wait + kMemoryTaskCopyMargin,
                          [this, key, id] { matching_.remove(key, id); });
    }
  }
  reply(internal::QueuedTasksAdded());
}

void Engine::queue_owners_changed(const MembersChange& change) {
  if (shards_ == nullptr || options_.task_queue_peers == nullptr) return;
  const bool members_changed = change.before != change.now;
  // This node's pending tasks whose queue's owner changed, or may have
  // lost its copies, go to the owner now (an owner that has one already
  // ignores it). A sticky task's queue lives on its worker's node, whatever
  // the hashing says: it goes again at every change (they are few, and wait
  // there only until their fallback to the normal queue).
  auto to_hand_again = [&](const TaskRecord& task) {
    if (!serves(task.execution)) return false;
    if (sticky_task(task)) return true;
    const int64_t key = owner_key(task.execution.namespace_id, task.kind, task.queue);
    const std::string owner = rendezvous_owner(key, change.now);
    return owner != rendezvous_owner(key, change.before) || change.took_back.count(owner) != 0;
  };
  const std::vector<TaskRecord> again = matching_.queued_if(to_hand_again);
  push_to_owners(again);
  if (!members_changed) {
    log::info("a task queue owner took its shards back", {{"tasks_handed_again", std::to_string(again.size())}});
    return;
  }
  // Copies of other nodes' tasks in queues another node owns now: theirs
  // to hand over there.
  const size_t dropped = matching_.remove_if([this](const TaskRecord& task) {
    return !serves(task.execution) && !sticky_task(task) &&
           !shards_->queue_owner_address(owner_key(task.execution.namespace_id, task.kind, task.queue)).empty();
  });
  // Polls parked on those queues: the workers poll again, and reach the owner.
  const size_t ended = matching_.end_polls_if([this](const QueueKey& key) {
    return !shards_->queue_owner_address(owner_key(key.namespace_id, key.kind, key.queue)).empty();
  });
  log::info("task queue owners changed", {{"tasks_handed_again", std::to_string(again.size())},
                                          {"task_copies_dropped", std::to_string(dropped)},
                                          {"polls_ended", std::to_string(ended)}});
}

}  // namespace reprise::engine
