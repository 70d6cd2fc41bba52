#include "engine/server/open_database.hpp"

#include <unistd.h>

#include "engine/log.hpp"
#include "engine/store/postgres/postgres_store.hpp"
#include "engine/store/sqlite_store.hpp"

namespace reprise::engine {

namespace {

std::string host_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') return "localhost";
  return host;
}

// The port of --listen ("0" when the server picks one).
std::string listen_port(const std::string& listen) { return listen.substr(listen.rfind(':') + 1); }

Result<std::unique_ptr<Store>> open_postgres(ServerFlags& flags) {
  flags.postgres.rotate_task_token_key = flags.store.rotate_task_token_key;
  flags.postgres.blobs = flags.store.blobs;
  flags.postgres.on_write_stall = flags.store.on_write_stall;
  // A fixed port names the node across restarts; with port 0 the store
  // makes a name up.
  if (flags.postgres.cluster.node_id.empty() && listen_port(flags.listen) != "0") {
    flags.postgres.cluster.node_id = host_name() + ":" + listen_port(flags.listen);
  }
  Result<std::unique_ptr<PostgresStore>> store = PostgresStore::open(flags.db, flags.postgres);
  if (!store) return store.status();
  const PgOpenReport& opened = (*store)->open_report();
  log::info(opened.created ? "database created" : "database opened",
            {{"db", (*store)->name()},
             {"postgresql", opened.server_version},
             {"schema_version", std::to_string(opened.schema_version)},
             {"shards", std::to_string(opened.shard_count)}});
  PgShardLeases& leases = (*store)->leases();
  int served = 0;
  for (int s = 0; s < leases.shard_count(); ++s) served += leases.serves(s) ? 1 : 0;
  log::info("joined the cluster", {{"node_id", leases.node_id()},
                                   {"shards_held", std::to_string(served)},
                                   {"lease_ms", std::to_string(flags.postgres.cluster.lease.count())}});
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

std::string announce_address(Store& store, const ServerFlags& flags, int port) {
  auto* postgres = dynamic_cast<PostgresStore*>(&store);
  if (postgres == nullptr) return "";
  std::string address = flags.postgres.cluster.address;
  if (address.empty()) address = host_name() + ":" + std::to_string(port);
  postgres->leases().set_address(address);
  return address;
}

}  // namespace reprise::engine
