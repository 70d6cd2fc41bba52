// Opens either store by its database argument: a SQLite file's path, or a
// postgresql:// URL (what reprise-server's --db takes). For the store tests
// and their child process.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>

#include "engine/store/postgres/postgres_store.hpp"
#include "engine/store/sqlite_store.hpp"

namespace reprise::engine::testing {

// The SQLite store for a path, the PostgreSQL store for a postgresql:// URL.
inline Result<std::unique_ptr<Store>> open_any_store(const std::string& db, StoreOptions options = {}) {
  if (is_postgres_url(db)) {
    PostgresStoreOptions pg;
    pg.max_batch = options.max_batch;
    pg.fault_hook = std::move(options.fault_hook);
    pg.clock = options.clock;
    pg.blobs = options.blobs;
    pg.rotate_task_token_key = options.rotate_task_token_key;
    // One node name for a test and the child process it kills, so a store
    // reopened after the kill takes the shards back at once (as a restarted
    // server with its --node-id does) instead of waiting out the leases.
    pg.cluster.node_id = "store-tests";
    if (const char* shape = std::getenv("REPRISE_PG_COMMIT_SHAPE"); shape != nullptr) {
      pg.commit_shape = std::string(shape) == "savepoints" ? PgCommitShape::kSavepoints : PgCommitShape::kPipelined;
    }
    Result<std::unique_ptr<PostgresStore>> s = PostgresStore::open(db, std::move(pg));
    if (!s) return s.status();
    return std::unique_ptr<Store>(std::move(*s));
  }
  Result<std::unique_ptr<SqliteStore>> s = SqliteStore::open(db, std::move(options));
  if (!s) return s.status();
  return std::unique_ptr<Store>(std::move(*s));
}

inline WriterStats writer_stats_of(Store& store) {
  if (auto* pg = dynamic_cast<PostgresStore*>(&store)) return pg->writer_stats();
  return dynamic_cast<SqliteStore&>(store).writer_stats();
}

}  // namespace reprise::engine::testing
