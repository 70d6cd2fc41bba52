// The keys that sign task tokens (engine/execution/task_token_codec.hpp), as
// the database keeps them: in reprise_meta, key 'task_token_keys', newest
// first, so the tokens of running tasks outlive a restart.
//
// Thread safety: load_task_token_keys runs on a connection no other thread
// uses (the writer's, while the store opens).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "history/status.hpp"

namespace reprise::engine {

class SqliteDb;

struct TaskTokenKey {
  uint32_t id = 0;
  std::string secret;  // 32 random bytes
};

// A key with `id` and a secret from OpenSSL's CSPRNG.
TaskTokenKey new_task_token_key(uint32_t id);

// `keys` (newest first) with a new first key, keeping only the one before it.
std::vector<TaskTokenKey> with_new_task_token_key(std::vector<TaskTokenKey> keys);

// How reprise_meta holds them: "id:hex,id:hex", newest first. Parsing
// answers DATA_LOSS naming `database` for anything else.
std::string format_task_token_keys(const std::vector<TaskTokenKey>& keys);
Result<std::vector<TaskTokenKey>> parse_task_token_keys(const std::string& text, const std::string& database);

// The database's keys, newest first. The first open makes one; `rotate`
// adds a new first key and keeps only the one before it, so a token signed
// before the rotation still verifies and one from two rotations ago does
// not. Writes (in a transaction of its own) only when it makes a key.
Result<std::vector<TaskTokenKey>> load_task_token_keys(SqliteDb& db, bool rotate);

}  // namespace reprise::engine
