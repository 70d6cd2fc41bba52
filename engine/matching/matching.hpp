// Matching: the in-memory task queues between committed tasks and polling
// workers.
//
// A task enters when the transition that created it has committed (or when
// the server rebuilds its queues from the store at start); a poll takes the
// oldest task of its queue at once, or parks until one arrives or its
// deadline passes. A parked poll holds no thread: it is a callback in a list.
// Each queue hands out its tasks in the order they arrived, each task to one
// poller. Queues are in memory only; the store's task table is the truth, and
// a task handed out stays there until the engine records it started.
//
// Thread safety: all methods may be called from any thread. Callbacks run on
// the thread that matched them (the adder's, the poller's or the deadline
// scheduler's) with no lock held, and must not block.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/deadlines.hpp"
#include "engine/store/records.hpp"

namespace reprise::engine {

struct QueueKey {
  std::string namespace_id;
  TaskKind kind = TaskKind::kWorkflowTask;
  std::string queue;
  friend auto operator<=>(const QueueKey&, const QueueKey&) = default;
};

// One queue's tasks waiting for a poll and polls waiting for a task.
struct QueueLoad {
  QueueKey key;
  size_t tasks = 0;
  size_t parked_polls = 0;
};

// The task, or nothing when the poll's deadline passed, it was cancelled, or
// matching is shutting down.
using PollCallback = std::function<void(std::optional<TaskRecord>)>;

class Matching {
 public:
  using PollId = uint64_t;

  explicit Matching(Deadlines& deadlines) : deadlines_(deadlines) {}

  // Adds a committed task to the queue of its execution's namespace, kind
  // and queue name. A task id already queued is ignored, so rebuilding from
  // the store may overlap with new commits.
  void add(TaskRecord task);

  // Takes the oldest task of `key` now, or parks until one arrives or
  // `deadline`. Returns an id for cancel(). `pinned`: end_polls_if() leaves
  // it parked (a sticky queue's poll, which stays on this node).
  PollId poll(const QueueKey& key, Deadlines::SteadyTime deadline, PollCallback done, bool pinned = false);

  // Removes a queued task that is no longer wanted (an expired query task).
  // False if a poller took it already.
  bool remove(const QueueKey& key, int64_t task_id);

  // Removes every queued task `pred` picks (their shard moved to another
  // node); how many.
  size_t remove_if(const std::function<bool(const TaskRecord&)>& pred);

  // Ends a parked poll with no task (its caller went away). False if it had
  // already ended.
  bool cancel(PollId id);
  // Ends with no task every parked poll, but pinned ones, whose queue
  // `pred` picks (this node no longer owns that queue: the worker polls
  // again and reaches the owner); how many.
  size_t end_polls_if(const std::function<bool(const QueueKey&)>& pred);

  // Whether task `task_id` is waiting in a queue.
  bool queued(int64_t task_id) const;
  // Copies of the queued tasks `pred` picks.
  std::vector<TaskRecord> queued_if(const std::function<bool(const TaskRecord&)>& pred) const;

  // Ends every parked poll with no task; later polls end at once.
  void shutdown();

  size_t backlog(const QueueKey& key) const;
  // Tasks waiting in every queue.
  size_t total_backlog() const;
  // Queues holding a task or a parked poll; an idle queue is dropped (every
  // worker process brings sticky queues of its own, which would otherwise
  // stay forever).
  size_t queue_count() const;
  // Every queue's load now (for the metrics' scrape: one lock, one pass);
  // `counted`, when given, picks the tasks counted.
  std::vector<QueueLoad> loads(const std::function<bool(const TaskRecord&)>& counted = nullptr) const;

 private:
  struct Queue {
    std::deque<TaskRecord> tasks;
    std::deque<PollId> pollers;  // oldest first
  };
  struct Poller {
    QueueKey key;
    PollCallback done;
    Deadlines::Id deadline = 0;
    bool pinned = false;
  };

  // Removes a parked poller; returns its callback, or nothing if it is gone.
  std::optional<PollCallback> take_poller_locked(PollId id);
  void drop_if_idle_locked(std::map<QueueKey, Queue>::iterator queue);

  Deadlines& deadlines_;
  mutable std::mutex mu_;
  std::map<QueueKey, Queue> queues_;
  std::unordered_map<PollId, Poller> pollers_;
  std::set<int64_t> queued_task_ids_;
  PollId next_poll_id_ = 1;
  bool shut_down_ = false;
};

}  // namespace reprise::engine
