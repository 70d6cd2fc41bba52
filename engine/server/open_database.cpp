#include "engine/server/open_database.hpp"

#include "engine/log.hpp"
#include "engine/store/postgres/postgres_store.hpp"
#include "engine/store/sqlite_store.hpp"

namespace reprise::engine {

namespace {

Result<std::unique_ptr<Store>> open_postgres(ServerFlags& flags) {
  flags.postgres.rotate_task_token_key = flags.store.rotate_task_token_key;
  flags.postgres.blobs = flags.store.blobs;
  Result<std::unique_ptr<PostgresStore>> store = PostgresStore::open(flags.db, flags.postgres);
  if (!store) return store.status();
  const PgOpenReport& opened = (*store)->open_report();
  log::info(opened.created ? "database created" : "database opened",
            {{"db", (*store)->name()},
             {"postgresql", opened.server_version},
             {"schema_version", std::to_string(opened.schema_version)},
             {"shards", std::to_string(opened.shard_count)}});
  if (opened.fsync != "on" || opened.synchronous_commit == "off" || opened.synchronous_commit == "local") {
    log::warn(
        "PostgreSQL may lose acknowledged commits in a crash of its host: set fsync = on and synchronous_commit = "
        "on (or remote_write/remote_apply with a synchronous standby)",
        {{"db", (*store)->name()}, {"fsync", opened.fsync}, {"synchronous_commit", opened.synchronous_commit}});
  }
  return std::unique_ptr<Store>(std::move(*store));
}

Result<std::unique_ptr<Store>> open_sqlite(ServerFlags& flags) {
  Result<std::unique_ptr<SqliteStore>> store = SqliteStore::open(flags.db, flags.store);
  if (!store) return store.status();
  const OpenReport& opened = (*store)->open_report();
  if (opened.created) {
    log::info("database created", {{"db", flags.db}});
  } else if (opened.quick_checked) {
    log::info(
        "database passed quick_check",
        {{"db", flags.db},
         {"pages", std::to_string(opened.pages)},
         {"quick_check_ms",
          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(opened.quick_check_time).count())}});
  } else {
    log::warn("database opened without quick_check (--skip-quick-check)", {{"db", flags.db}});
  }
  return std::unique_ptr<Store>(std::move(*store));
}

}  // namespace

Result<std::unique_ptr<Store>> open_database(ServerFlags& flags) {
  return is_postgres_url(flags.db) ? open_postgres(flags) : open_sqlite(flags);
}

}  // namespace reprise::engine
