#include "engine/store/postgres/postgres_schema.hpp"

#include <string>

namespace reprise::engine {

namespace {

// Every integer is BIGINT (pg_connection.hpp). shard_id leads the keys of
// everything an execution owns, so a shard's rows can be found (and, on a
// distributed database, kept) together.
constexpr PgMigration kMigrations[] = {
    {1, R"sql(
CREATE TABLE executions (
  shard_id      BIGINT NOT NULL,
  namespace     TEXT NOT NULL,
  workflow_id   TEXT NOT NULL,
  run_id        TEXT NOT NULL,
  version       BIGINT NOT NULL,
  next_event_id BIGINT NOT NULL,
  status        BIGINT NOT NULL,
  state         BYTEA NOT NULL,
  PRIMARY KEY (shard_id, namespace, workflow_id, run_id)
);

CREATE TABLE current_runs (
  shard_id         BIGINT NOT NULL,
  namespace        TEXT NOT NULL,
  workflow_id      TEXT NOT NULL,
  run_id           TEXT NOT NULL,
  status           BIGINT NOT NULL,
  start_request_id TEXT NOT NULL,
  PRIMARY KEY (shard_id, namespace, workflow_id)
);

-- One row per appended batch, keyed by its last event.
CREATE TABLE history (
  shard_id       BIGINT NOT NULL,
  namespace      TEXT NOT NULL,
  workflow_id    TEXT NOT NULL,
  run_id         TEXT NOT NULL,
  last_event_id  BIGINT NOT NULL,
  first_event_id BIGINT NOT NULL,
  data           BYTEA NOT NULL,
  PRIMARY KEY (shard_id, namespace, workflow_id, run_id, last_event_id)
);

-- Ids from sequences: never reused, so a stale id never names a newer row.
CREATE TABLE tasks (
  task_id     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  shard_id    BIGINT NOT NULL,
  kind        BIGINT NOT NULL,
  queue       TEXT NOT NULL,
  namespace   TEXT NOT NULL,
  workflow_id TEXT NOT NULL,
  run_id      TEXT NOT NULL,
  payload     BYTEA NOT NULL
);
CREATE INDEX tasks_by_execution ON tasks (shard_id, namespace, workflow_id, run_id);

CREATE TABLE timers (
  timer_id    BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  shard_id    BIGINT NOT NULL,
  fire_at     BIGINT NOT NULL,
  namespace   TEXT NOT NULL,
  workflow_id TEXT NOT NULL,
  run_id      TEXT NOT NULL,
  payload     BYTEA NOT NULL
);
CREATE INDEX timers_by_fire_at ON timers (fire_at, timer_id);
CREATE INDEX timers_by_execution ON timers (shard_id, namespace, workflow_id, run_id);

-- COLLATE "C": ids compare byte by byte, as in SQLite, whatever the
-- database's locale, so pages come in the same order from both stores.
CREATE TABLE visibility (
  namespace     TEXT COLLATE "C" NOT NULL,
  workflow_id   TEXT COLLATE "C" NOT NULL,
  run_id        TEXT COLLATE "C" NOT NULL,
  workflow_type TEXT NOT NULL,
  task_queue    TEXT NOT NULL,
  status        BIGINT NOT NULL,
  start_time    BIGINT NOT NULL,
  close_time    BIGINT,
  PRIMARY KEY (namespace, workflow_id, run_id)
);
CREATE INDEX visibility_by_start ON visibility (namespace, start_time, workflow_id, run_id);
-- Retention looks for one namespace's closed runs, oldest first.
CREATE INDEX visibility_by_close ON visibility (namespace, close_time) WHERE close_time IS NOT NULL;

-- Claim-check blobs in chunks; complete = false while an upload is in
-- progress (sha256 NULL until it finishes).
CREATE TABLE blobs (
  blob_id    BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  sha256     BYTEA UNIQUE,
  size       BIGINT NOT NULL,
  complete   BOOLEAN NOT NULL,
  touched_at BIGINT NOT NULL
);
CREATE TABLE blob_chunks (
  blob_id BIGINT NOT NULL REFERENCES blobs (blob_id) ON DELETE CASCADE,
  seq     BIGINT NOT NULL,
  data    BYTEA NOT NULL,
  PRIMARY KEY (blob_id, seq)
);
CREATE TABLE blob_refs (
  sha256      BYTEA NOT NULL,
  namespace   TEXT NOT NULL,
  workflow_id TEXT NOT NULL,
  run_id      TEXT NOT NULL,
  PRIMARY KEY (sha256, namespace, workflow_id, run_id)
);
CREATE INDEX blob_refs_by_owner ON blob_refs (namespace, workflow_id, run_id);

-- Which namespaces may read a blob: the ones it was uploaded or written in.
CREATE TABLE blob_namespaces (
  blob_id   BIGINT NOT NULL REFERENCES blobs (blob_id) ON DELETE CASCADE,
  namespace TEXT NOT NULL,
  PRIMARY KEY (blob_id, namespace)
);

-- The namespace registry. retention_seconds NULL: the server's --retention.
CREATE TABLE namespaces (
  name              TEXT COLLATE "C" PRIMARY KEY,
  description       TEXT NOT NULL,
  retention_seconds BIGINT,
  created_at        BIGINT NOT NULL
);
INSERT INTO namespaces (name, description, retention_seconds, created_at)
  VALUES ('default', 'The namespace of requests that name none', NULL,
          (extract(epoch FROM clock_timestamp()) * 1e9)::bigint);

-- API keys: only the SHA-256 of each secret. namespaces and roles are
-- comma-separated; namespaces '*' is every namespace. A revoked key stays.
CREATE TABLE api_keys (
  name       TEXT COLLATE "C" PRIMARY KEY,
  sha256     BYTEA NOT NULL UNIQUE,
  namespaces TEXT NOT NULL,
  roles      TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  revoked_at BIGINT
);
)sql"},
    // The cluster (docs/cluster.md): a lease per shard, fenced by range_id,
    // and the nodes that heartbeat. Times are the database's own clock
    // (now()), never a node's. The rows of `shards` are made at open, one
    // per shard of the count fixed at creation.
    {2, R"sql(
CREATE TABLE shards (
  shard_id   BIGINT PRIMARY KEY,
  owner      TEXT NOT NULL,
  range_id   BIGINT NOT NULL,
  expires_at TIMESTAMPTZ NOT NULL
);
CREATE TABLE cluster_members (
  node_id      TEXT PRIMARY KEY,
  address      TEXT NOT NULL,
  heartbeat_at TIMESTAMPTZ NOT NULL
);
)sql"},
};

Result<int> parse_positive(const std::string& text) {
  try {
    size_t used = 0;
    const int v = std::stoi(text, &used);
    if (used == text.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  return Status::data_loss("unreadable number '" + text + "'");
}

Result<std::string> meta_value(PgConnection& db, const char* key, bool for_update) {
  std::string sql = "SELECT value FROM reprise_meta WHERE key = $1";
  if (for_update) sql += " FOR UPDATE";
  Result<PgResult> r = db.query(sql, PgParams().add_text(key));
  if (!r) return r.status();
  if (r->rows() == 0) return Status::data_loss("database '" + db.name() + "' has no " + key + " in reprise_meta");
  return r->get_bytes(0, 0);
}

}  // namespace

std::span<const PgMigration> postgres_migrations() { return kMigrations; }

Result<PgSchema> migrate_postgres(PgConnection& db, std::span<const PgMigration> migrations, int shard_count) {
  if (shard_count < 1 || shard_count > 65536) {
    return Status::invalid_argument("shard count must be between 1 and 65536, got " + std::to_string(shard_count));
  }
  // Someone else's database is not written to.
  Result<PgResult> tables = db.query(
      "SELECT count(*), count(*) FILTER (WHERE table_name = 'reprise_meta') FROM information_schema.tables "
      "WHERE table_schema = current_schema()");
  if (!tables) return tables.status();
  if (tables->get_int(0, 1) == 0 && tables->get_int(0, 0) > 0) {
    return Status::failed_precondition("database '" + db.name() + "' is not a Reprise database: it holds " +
                                       std::to_string(tables->get_int(0, 0)) +
                                       " tables and no reprise_meta; use an empty database");
  }
  // Concurrent creators meet at the version row. CREATE TABLE IF NOT EXISTS
  // is not safe against a concurrent creator: the loser waits for the
  // winner's commit and then fails on the table's row type ("type
  // reprise_meta already exists", 42710). The table exists by then, so a
  // second try is a no-op.
  const char* create_meta =
      "CREATE TABLE IF NOT EXISTS reprise_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
      "INSERT INTO reprise_meta (key, value) VALUES ('schema_version', '0') ON CONFLICT DO NOTHING";
  Status meta = db.exec(create_meta);
  if (!meta.is_ok() && meta.code() != StatusCode::kAlreadyExists) meta = db.exec(create_meta);
  if (!meta.is_ok() && meta.code() != StatusCode::kAlreadyExists) return meta;

  REPRISE_RETURN_IF_ERROR(db.exec("BEGIN"));
  auto fail = [&db](Status s) {
    (void)db.exec("ROLLBACK");
    return s;
  };
  Result<std::string> text = meta_value(db, "schema_version", true);
  if (!text) return fail(text.status());
  Result<int> found = parse_positive(*text);
  if (!found) return fail(found.status().with_context("database '" + db.name() + "' schema_version"));
  PgSchema schema;
  schema.version = migrations.back().version;
  schema.created = *found == 0;
  if (*found > schema.version) {
    return fail(Status::failed_precondition(
        "database '" + db.name() + "' has schema version " + std::to_string(*found) + ", newer than the version " +
        std::to_string(schema.version) + " this build of Reprise supports; upgrade Reprise"));
  }
  for (const PgMigration& m : migrations) {
    if (m.version <= *found) continue;
    Status s = db.exec(m.sql);
    if (!s.is_ok()) return fail(s.with_context("migrating to schema version " + std::to_string(m.version)));
  }
  if (schema.created) {
    Result<PgResult> s = db.query("INSERT INTO reprise_meta (key, value) VALUES ('shard_count', $1)",
                                  PgParams().add_text(std::to_string(shard_count)));
    if (!s) return fail(s.status());
  }
  if (*found < schema.version) {
    Result<PgResult> s = db.query("UPDATE reprise_meta SET value = $1 WHERE key = 'schema_version'",
                                  PgParams().add_text(std::to_string(schema.version)));
    if (!s) return fail(s.status());
  }
  Result<std::string> shards = meta_value(db, "shard_count", false);
  if (!shards) return fail(shards.status());
  Result<int> count = parse_positive(*shards);
  if (!count || *count < 1) return fail(Status::data_loss("database '" + db.name() + "' records a bad shard_count"));
  schema.shard_count = *count;
  // A free lease for every shard (expired since the epoch).
  Result<PgResult> leases = db.query(
      "INSERT INTO shards (shard_id, owner, range_id, expires_at) "
      "SELECT s, '', 0, 'epoch' FROM generate_series(0, $1 - 1) AS s ON CONFLICT DO NOTHING",
      PgParams().add(static_cast<int64_t>(schema.shard_count)));
  if (!leases) return fail(leases.status());
  REPRISE_RETURN_IF_ERROR(db.exec("COMMIT"));
  return schema;
}

}  // namespace reprise::engine
