// ShardOwnership: which shards of the executions this node serves, for a
// store shared by a cluster of reprise-server nodes (docs/cluster.md). A
// store used by one process alone (SQLite) has none: it serves everything.
//
// The store itself refuses a write to a shard it does not hold (the fencing
// range_id); the engine uses this to stop serving what it lost (its queued
// tasks, held starts and timers) and to load what it gained.
//
// Thread safety: all methods may be called from any thread.
#pragma once

#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "engine/store/records.hpp"
#include "engine/store/shard.hpp"

namespace reprise::engine {

// A set of shards, by shard id: shards[s] is true for shard s.
using ShardSet = std::vector<bool>;

// What changed among the live nodes between two lease rounds: the owners of
// task queues may have changed (docs/cluster.md, "Task queues"), or lost
// what they held.
struct MembersChange {
  // The live nodes (node ids) before and now, as rendezvous hashing takes
  // them; equal when only shards changed hands.
  std::vector<std::string> before;
  std::vector<std::string> now;
  // Nodes that took back a shard they held, under a new range_id: a node
  // restarted within a lease (a live member all along) does, its memory
  // gone (a shard that moved from one node to another is not counted).
  std::set<std::string> took_back;
};

struct ShardListener {
  // Shards this node now holds: their tasks are to be loaded.
  std::function<void(const ShardSet&)> gained;
  // Shards it holds no more: its memory of them is to be dropped.
  std::function<void(const ShardSet&)> lost;
  // The live nodes changed, or a shard changed hands.
  std::function<void(const MembersChange&)> members_changed;
};

class ShardOwnership {
 public:
  virtual ~ShardOwnership() = default;

  virtual int shard_count() const = 0;
  // Whether this node may serve `shard` now: it holds the lease, and by its
  // own clock the lease has not run out since it was last renewed.
  virtual bool serves(int64_t shard) const = 0;
  // Who holds `shard`, as this node last saw it, for messages: "node N at
  // ADDRESS", or "no node".
  virtual std::string owner_of(int64_t shard) const = 0;
  // Where to reach the live node that holds `shard` when it is not this
  // node: its announced address; "" when this node serves it or no live
  // node holds it.
  virtual std::string owner_address(int64_t shard) const = 0;
  // The announced addresses of the other live nodes.
  virtual std::vector<std::string> peer_addresses() const = 0;
  // Where to reach the live node that owns the worker task queue whose
  // task_queue_key() (rendezvous.hpp) is `queue_key`: rendezvous hashing
  // over the live nodes, as for shards (docs/cluster.md, "Task queues"). Its
  // announced address; "" when it is this node, or no live node is known.
  virtual std::string queue_owner_address(int64_t queue_key) const = 0;
  // How many live nodes that hashing is over, as last read.
  virtual size_t live_nodes() const = 0;
  // Calls listener.gained with the shards held now, then with every change,
  // in order, on one thread of the store's; an empty listener stops the
  // calls (and waits for one in progress). Callbacks must not call back
  // into listen().
  virtual void listen(ShardListener listener) = 0;

  int64_t shard_of(const ExecutionKey& key) const {
    return engine::shard_of(key.namespace_id, key.workflow_id, shard_count());
  }
  bool serves(const ExecutionKey& key) const { return serves(shard_of(key)); }
};

}  // namespace reprise::engine
