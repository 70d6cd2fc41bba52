#include "engine/store/schema.hpp"

#include <string>

namespace reprise::engine {

namespace {

// 'RPRS': marks the file as a Reprise database (see sqlite.org/fileformat).
constexpr int64_t kApplicationId = 0x52505253;

constexpr Migration kSqliteMigrations[] = {
    {1, R"sql(
CREATE TABLE reprise_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE executions (
  namespace     TEXT NOT NULL,
  workflow_id   TEXT NOT NULL,
  run_id        TEXT NOT NULL,
  version       INTEGER NOT NULL,
  next_event_id INTEGER NOT NULL,
  status        INTEGER NOT NULL,
  state         BLOB NOT NULL,
  UNIQUE (namespace, workflow_id, run_id)
);

CREATE TABLE current_runs (
  namespace        TEXT NOT NULL,
  workflow_id      TEXT NOT NULL,
  run_id           TEXT NOT NULL,
  status           INTEGER NOT NULL,
  start_request_id TEXT NOT NULL,
  PRIMARY KEY (namespace, workflow_id)
) WITHOUT ROWID;

-- One row per appended batch; keyed by its last event so a read from event N
-- seeks straight to the batch holding N.
CREATE TABLE history (
  namespace      TEXT NOT NULL,
  workflow_id    TEXT NOT NULL,
  run_id         TEXT NOT NULL,
  last_event_id  INTEGER NOT NULL,
  first_event_id INTEGER NOT NULL,
  data           BLOB NOT NULL,
  UNIQUE (namespace, workflow_id, run_id, last_event_id)
);

-- AUTOINCREMENT: task and timer ids are never reused, so a stale id can
-- never name a newer task.
CREATE TABLE tasks (
  task_id     INTEGER PRIMARY KEY AUTOINCREMENT,
  kind        INTEGER NOT NULL,
  queue       TEXT NOT NULL,
  namespace   TEXT NOT NULL,
  workflow_id TEXT NOT NULL,
  run_id      TEXT NOT NULL,
  payload     BLOB NOT NULL
);
CREATE INDEX tasks_by_execution ON tasks (namespace, workflow_id, run_id);

CREATE TABLE timers (
  timer_id    INTEGER PRIMARY KEY AUTOINCREMENT,
  fire_at     INTEGER NOT NULL,
  namespace   TEXT NOT NULL,
  workflow_id TEXT NOT NULL,
  run_id      TEXT NOT NULL,
  payload     BLOB NOT NULL
);
CREATE INDEX timers_by_fire_at ON timers (fire_at, timer_id);
CREATE INDEX timers_by_execution ON timers (namespace, workflow_id, run_id);

CREATE TABLE visibility (
  namespace     TEXT NOT NULL,
  workflow_id   TEXT NOT NULL,
  run_id        TEXT NOT NULL,
  workflow_type TEXT NOT NULL,
  task_queue    TEXT NOT NULL,
  status        INTEGER NOT NULL,
  start_time    INTEGER NOT NULL,
  close_time    INTEGER,
  PRIMARY KEY (namespace, workflow_id, run_id)
) WITHOUT ROWID;
CREATE INDEX visibility_by_start ON visibility (namespace, start_time, workflow_id, run_id);

-- Claim-check blobs, stored in chunks. A row with complete = 0 is an upload
-- in progress (sha256 NULL until it finishes). touched_at is the last upload
-- of these bytes; garbage collection spares blobs touched within its grace.
CREATE TABLE blobs (
  blob_id    INTEGER PRIMARY KEY AUTOINCREMENT,
  sha256     BLOB UNIQUE,
  size       INTEGER NOT NULL,
  complete   INTEGER NOT NULL,
  touched_at INTEGER NOT NULL
);
CREATE TABLE blob_chunks (
  blob_id INTEGER NOT NULL REFERENCES blobs (blob_id) ON DELETE CASCADE,
  seq     INTEGER NOT NULL,
  data    BLOB NOT NULL,
  PRIMARY KEY (blob_id, seq)
);
CREATE TABLE blob_refs (
  sha256      BLOB NOT NULL,
  namespace   TEXT NOT NULL,
  workflow_id TEXT NOT NULL,
  run_id      TEXT NOT NULL,
  PRIMARY KEY (sha256, namespace, workflow_id, run_id)
) WITHOUT ROWID;
CREATE INDEX blob_refs_by_owner ON blob_refs (namespace, workflow_id, run_id);
)sql"},
    {2, R"sql(
-- Closed runs by close time: what the retention sweeper deletes, oldest first.
CREATE INDEX visibility_by_close ON visibility (close_time) WHERE close_time IS NOT NULL;
)sql"},
    {3, R"sql(
-- The namespace registry. retention_seconds NULL: the server's --retention.
-- 'default' exists in every database; a database from before namespaces held
-- only its data, which stays there.
CREATE TABLE namespaces (
  name              TEXT PRIMARY KEY,
  description       TEXT NOT NULL,
  retention_seconds INTEGER,
  created_at        INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO namespaces (name, description, retention_seconds, created_at)
  VALUES ('default', 'The namespace of requests that name none', NULL, CAST((julianday('now') - 2440587.5) * 86400e9 AS INTEGER));

-- Which namespaces may read a claim-check blob: the ones it was uploaded or
-- written in. The bytes are stored once whatever the namespaces.
CREATE TABLE blob_namespaces (
  blob_id   INTEGER NOT NULL REFERENCES blobs (blob_id) ON DELETE CASCADE,
  namespace TEXT NOT NULL,
  PRIMARY KEY (blob_id, namespace)
) WITHOUT ROWID;
INSERT INTO blob_namespaces (blob_id, namespace) SELECT blob_id, 'default' FROM blobs;

-- Retention looks for one namespace's closed runs, oldest first.
DROP INDEX visibility_by_close;
CREATE INDEX visibility_by_close ON visibility (namespace, close_time) WHERE close_time IS NOT NULL;

-- API keys: only the SHA-256 of each secret is kept. `namespaces` and `roles`
-- are comma-separated; namespaces '*' is every namespace. A revoked key stays
-- (revoked_at set), so revoking the last key never opens the server.
CREATE TABLE api_keys (
  name       TEXT PRIMARY KEY,
  sha256     BLOB NOT NULL UNIQUE,
  namespaces TEXT NOT NULL,
  roles      TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  revoked_at INTEGER
) WITHOUT ROWID;
)sql"},
};

Status set_version(SqliteDb& db, int version) {
  Result<Statement> stmt = db.prepare(
      "INSERT INTO reprise_meta (key, value) VALUES ('schema_version', ?1) "
      "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
  if (!stmt) return stmt.status();
  return stmt->bind(1, std::to_string(version)).run();
}

Result<int64_t> pragma_int(SqliteDb& db, const char* sql) {
  Result<Statement> stmt = db.prepare(sql);
  if (!stmt) return stmt.status();
  Result<bool> row = stmt->step();
  if (!row) return row.status();
  return *row ? stmt->column_int(0) : 0;
}

}  // namespace

std::span<const Migration> schema_migrations() { return kSqliteMigrations; }

int current_schema_version() { return schema_migrations().back().version; }

Result<int> read_schema_version(SqliteDb& db) {
  Result<int64_t> app_id = pragma_int(db, "PRAGMA application_id");
  if (!app_id) return app_id.status();
  Result<int64_t> tables = pragma_int(db, "SELECT count(*) FROM sqlite_schema");
  if (!tables) return tables.status();
  if (*app_id == 0 && *tables == 0) return 0;  // a new, empty file
  if (*app_id != kApplicationId) {
    return Status::failed_precondition("database '" + db.path() + "' is not a Reprise database (application_id " +
                                       std::to_string(*app_id) + ")");
  }
  Result<Statement> stmt = db.prepare("SELECT value FROM reprise_meta WHERE key = 'schema_version'");
  if (!stmt) return stmt.status();
  Result<bool> row = stmt->step();
  if (!row) return row.status();
  if (!*row) return Status::data_loss("database '" + db.path() + "' has no schema version recorded");
  const std::string text = stmt->column_text(0);
  try {
    size_t used = 0;
    const int version = std::stoi(text, &used);
    if (used == text.size() && version > 0) return version;
  } catch (const std::exception&) {
  }
  return Status::data_loss("database '" + db.path() + "' records an unreadable schema version '" + text + "'");
}

Status migrate(SqliteDb& db, std::span<const Migration> migrations) {
  REPRISE_RETURN_IF_ERROR(db.exec("BEGIN IMMEDIATE"));
  auto fail = [&db](Status s) {
    (void)db.exec("ROLLBACK");
    return s;
  };
  Result<int> found = read_schema_version(db);
  if (!found) return fail(found.status());
  const int latest = migrations.back().version;
  if (*found > latest) {
    return fail(Status::failed_precondition(
        "database '" + db.path() + "' has schema version " + std::to_string(*found) + ", newer than the version " +
        std::to_string(latest) + " this build of Reprise supports; upgrade Reprise"));
  }
  for (const Migration& m : migrations) {
    if (m.version <= *found) continue;
    Status s = db.exec(m.sql);
    if (!s.is_ok()) return fail(s.with_context("migrating to schema version " + std::to_string(m.version)));
  }
  if (*found < latest) {
    Status s = db.exec(("PRAGMA application_id = " + std::to_string(kApplicationId)).c_str());
    if (s.is_ok()) s = set_version(db, latest);
    if (!s.is_ok()) return fail(s);
  }
  return db.exec("COMMIT");
}

}  // namespace reprise::engine
