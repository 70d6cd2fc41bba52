// TaskQueuePeers: how the engine reaches the other nodes of a cluster about
// worker task queues (docs/cluster.md, "Task queues"): it hands the tasks of
// its shards to the node that owns their queue, and, as a queue's owner, asks
// the node that serves a matched task's shard to start it. The server
// implements it over gRPC (engine/server/cluster_service.hpp); an engine
// without one keeps every task in its own queues.
//
// Thread safety: any method from any thread; `done` runs once, on a thread of
// the implementation's, and must not block.
#pragma once

#include <functional>
#include <string>

#include "history/status.hpp"
#include "reprise/internal/cluster.pb.h"

namespace reprise::engine {

class TaskQueuePeers {
 public:
  using Added = std::function<void(Status)>;
  using Started = std::function<void(Result<internal::StartedTask>)>;
  virtual ~TaskQueuePeers() = default;
  // Gives `tasks` to the node at `address` (host:port), their queues' owner.
  virtual void add(const std::string& address, const internal::QueuedTasks& tasks, Added done) = 0;
  // Asks the node at `address`, which serves the task's shard, to start it.
  virtual void start(const std::string& address, const internal::StartTaskRequest& request, Started done) = 0;
};

}  // namespace reprise::engine
