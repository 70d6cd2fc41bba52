// Rendezvous (highest random weight) hashing of shards over cluster nodes:
// each shard goes to the live node with the highest weight for it. When a
// node joins, only the shards it now wins move to it; when one leaves, only
// its own shards move, spread over the others. Written down here (FNV-1a and
// splitmix64's finalizer) so every node of a cluster, whatever its build,
// computes the same assignment.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace reprise::engine {

inline uint64_t rendezvous_weight(std::string_view node_id, int64_t shard) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : node_id) {
    h ^= c;
    h *= 1099511628211ull;
  }
  h ^= static_cast<uint64_t>(shard);
  // FNV-1a alone spreads similar node ids badly; the finalizer mixes.
  h += 0x9e3779b97f4a7c15ull;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

// The node of `nodes` that `shard` belongs to; "" when there are none.
inline std::string rendezvous_owner(int64_t shard, const std::vector<std::string>& nodes) {
  const std::string* best = nullptr;
  uint64_t best_weight = 0;
  for (const std::string& node : nodes) {
    const uint64_t w = rendezvous_weight(node, shard);
    if (best == nullptr || w > best_weight || (w == best_weight && node < *best)) {
      best = &node;
      best_weight = w;
    }
  }
  return best == nullptr ? "" : *best;
}

// A worker task queue as a number to hash like a shard (docs/cluster.md,
// "Task queues"): FNV-1a of its namespace, kind (the store's TaskKind
// number) and name, each followed by a zero byte.
inline int64_t task_queue_key(std::string_view namespace_id, int kind, std::string_view queue) {
  uint64_t h = 14695981039346656037ull;
  auto add = [&h](std::string_view part) {
    for (unsigned char c : part) {
      h ^= c;
      h *= 1099511628211ull;
    }
    h *= 1099511628211ull;  // the zero byte: h ^= 0, then the multiply
  };
  add(namespace_id);
  add(std::to_string(kind));
  add(queue);
  return static_cast<int64_t>(h);
}

}  // namespace reprise::engine
