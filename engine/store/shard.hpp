// Which shard an execution belongs to: a fixed function of its namespace and
// workflow id, so every run of a workflow id (and its current-run row) is in
// one shard. The shard count is fixed when a database is created (the
// PostgreSQL store records it in reprise_meta); changing the function or the
// count would move rows between shards, so neither ever changes for a
// database.
#pragma once

#include <cstdint>
#include <string_view>

namespace reprise::engine {

inline constexpr int kDefaultShardCount = 256;

// FNV-1a (64-bit) of "namespace\0workflow_id": simple, fast and written down
// here, not a library's hash that could change under us.
inline int64_t shard_of(std::string_view namespace_id, std::string_view workflow_id, int shard_count) {
  uint64_t h = 14695981039346656037ull;
  auto mix = [&h](std::string_view bytes) {
    for (unsigned char c : bytes) {
      h ^= c;
      h *= 1099511628211ull;
    }
  };
  mix(namespace_id);
  mix(std::string_view("\0", 1));
  mix(workflow_id);
  return static_cast<int64_t>(h % static_cast<uint64_t>(shard_count));
}

}  // namespace reprise::engine
