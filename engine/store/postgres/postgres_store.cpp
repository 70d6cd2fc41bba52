#include "engine/store/postgres/postgres_store.hpp"

#include <unistd.h>

#include <cstdio>
#include <random>

#include "engine/store/postgres/postgres_api_keys.hpp"
#include "engine/store/postgres/postgres_schema.hpp"
#include "engine/store/visibility_page_token.hpp"

namespace reprise::engine {

namespace {

ExecutionKey key_at(const PgResult& r, int row, int first_column) {
  return {r.get_bytes(row, first_column), r.get_bytes(row, first_column + 1), r.get_bytes(row, first_column + 2)};
}

Result<std::string> setting(PgConnection& db, const char* name) {
  Result<PgResult> r = db.query("SELECT current_setting($1)", PgParams().add_text(name));
  if (!r) return r.status();
  return r->get_bytes(0, 0);
}

// The keys that sign task tokens, kept in reprise_meta as the SQLite store
// keeps them (task_token_keys.hpp). Servers opening a new database at once
// agree on the first key: the loser of the insert reads the winner's.
Result<std::vector<TaskTokenKey>> load_keys(PgPool& pool, bool rotate) {
  std::vector<TaskTokenKey> keys;
  Status s = pool.transaction([&](PgConnection& db) -> Status {
    constexpr const char* kRead = "SELECT value FROM reprise_meta WHERE key = 'task_token_keys' FOR UPDATE";
    Result<PgResult> read = db.query(kRead);
    if (!read) return read.status();
    if (read->rows() == 0) {
      Result<PgResult> made =
          db.query("INSERT INTO reprise_meta (key, value) VALUES ('task_token_keys', $1) ON CONFLICT DO NOTHING",
                   PgParams().add_text(format_task_token_keys(with_new_task_token_key({}))));
      if (!made) return made.status();
      read = db.query(kRead);
      if (!read) return read.status();
      rotate = false;  // a new database's first key is new already
    }
    Result<std::vector<TaskTokenKey>> stored = parse_task_token_keys(read->get_bytes(0, 0), db.name());
    if (!stored) return stored.status();
    keys = std::move(*stored);
    if (!rotate) return Status::ok();
    keys = with_new_task_token_key(std::move(keys));
    return db
        .query("UPDATE reprise_meta SET value = $1 WHERE key = 'task_token_keys'",
               PgParams().add_text(format_task_token_keys(keys)))
        .status();
  });
  if (!s.is_ok()) return s.with_context("task token keys");
  return keys;
}

// host name and a random suffix: unique, but new at every start.
std::string made_up_node_id() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  std::random_device random;
  char suffix[17] = {};
  std::snprintf(suffix, sizeof(suffix), "%08x%08x", random(), random());
  return std::string(host[0] != '\0' ? host : "node") + "-" + suffix;
}

PgParams& add_retention(PgParams& p, const std::optional<std::chrono::seconds>& retention) {
  return retention ? p.add(static_cast<int64_t>(retention->count())) : p.add_null_int();
}

}  // namespace

Result<std::unique_ptr<PostgresStore>> PostgresStore::open(const std::string& url, PostgresStoreOptions options) {
  if (!is_postgres_url(url)) {
    return Status::invalid_argument("'" + redact_password(url) + "' is not a postgresql:// URL");
  }
  const Clock& clock = options.clock != nullptr ? *options.clock : SystemClock::instance();
  Result<std::unique_ptr<PgConnection>> writer = PgConnection::connect(url);
  if (!writer) return writer.status();
  Result<PgSchema> schema = migrate_postgres(**writer, postgres_migrations(), options.shard_count);
  if (!schema) return schema.status();

  PgOpenReport report;
  report.created = schema->created;
  report.schema_version = schema->version;
  report.shard_count = schema->shard_count;
  for (auto [name, into] : {std::pair{"server_version", &report.server_version}, std::pair{"fsync", &report.fsync},
                            std::pair{"synchronous_commit", &report.synchronous_commit}}) {
    Result<std::string> value = setting(**writer, name);
    if (!value) return value.status();
    *into = *value;
  }

  std::vector<std::unique_ptr<PgConnection>> connections;
  for (int i = 0; i < std::max(1, options.connections); ++i) {
    Result<std::unique_ptr<PgConnection>> c = PgConnection::connect(url);
    if (!c) return c.status();
    connections.push_back(std::move(*c));
  }
  auto pool = std::make_unique<PgPool>(std::move(connections));
  Result<std::vector<TaskTokenKey>> keys = load_keys(*pool, options.rotate_task_token_key);
  if (!keys) return keys.status();
  const std::string name = (*writer)->name();
  // A batch never holds its shards' rows locked for long after its node
  // stopped (paused mid-batch): PostgreSQL ends the session, and the
  // takeover goes on.
  Status idle = (*writer)->set_session("SET idle_in_transaction_session_timeout = '" +
                                       std::to_string(options.cluster.lease.count()) + "ms'");
  if (!idle.is_ok()) return idle;
  if (options.cluster.node_id.empty()) options.cluster.node_id = made_up_node_id();
  Result<std::unique_ptr<PgConnection>> lease_db = PgConnection::connect(url);
  if (!lease_db) return lease_db.status();
  Result<std::unique_ptr<PgShardLeases>> leases =
      PgShardLeases::start(std::move(*lease_db), schema->shard_count, options.cluster);
  if (!leases) return leases.status();
  auto tw = std::make_unique<PgTransitionWriter>(std::move(*writer), schema->shard_count, options.max_batch,
                                                 options.commit_shape, std::move(options.fault_hook), clock,
                                                 leases->get(), std::move(options.on_write_stall));
  return std::unique_ptr<PostgresStore>(new PostgresStore(name, report, clock, std::move(pool), std::move(*leases),
                                                          std::move(tw), std::move(*keys), options.blobs));
}

PostgresStore::PostgresStore(std::string name, PgOpenReport report, const Clock& clock, std::unique_ptr<PgPool> pool,
                             std::unique_ptr<PgShardLeases> leases, std::unique_ptr<PgTransitionWriter> writer,
                             std::vector<TaskTokenKey> task_token_keys, BlobStoreOptions blob_options)
    : name_(std::move(name)),
      report_(std::move(report)),
      clock_(clock),
      pool_(std::move(pool)),
      leases_(std::move(leases)),
      writer_(std::move(writer)),
      blobs_(std::make_unique<PgBlobStore>(*pool_, clock_, blob_options)),
      task_token_keys_(std::move(task_token_keys)) {}

PostgresStore::~PostgresStore() {
  writer_.reset();  // commits or fails everything queued first
  leases_.reset();  // then gives the shards up
}

int64_t PostgresStore::shard(const std::string& namespace_id, const std::string& workflow_id) const {
  return shard_of(namespace_id, workflow_id, report_.shard_count);
}

StorageStats PostgresStore::storage_stats() const {
  StorageStats stats;
  stats.writes = writer_->stats();
  return stats;
}

void PostgresStore::commit_async(Transition transition, CommitCallback done) {
  writer_->submit(std::move(transition), std::move(done));
}

Result<ExecutionRecord> PostgresStore::get_execution(const ExecutionKey& key) {
  Result<PgResult> r = pool_->read([&](PgConnection& db) {
    return db.query(
        "SELECT version, next_event_id, status, state FROM executions "
        "WHERE shard_id = $1 AND namespace = $2 AND workflow_id = $3 AND run_id = $4",
        PgParams()
            .add(shard(key.namespace_id, key.workflow_id))
            .add_text(key.namespace_id)
            .add_text(key.workflow_id)
            .add_text(key.run_id));
  });
  if (!r) return r.status();
  if (r->rows() == 0) return Status::not_found("execution " + key.to_string() + " does not exist");
  ExecutionRecord e;
  e.key = key;
  e.version = r->get_int(0, 0);
  e.next_event_id = r->get_int(0, 1);
  e.status = static_cast<v1::WorkflowExecutionStatus>(r->get_int(0, 2));
  e.state = r->get_bytes(0, 3);
  return e;
}

Result<CurrentRun> PostgresStore::get_current_run(const std::string& namespace_id, const std::string& workflow_id) {
  Result<PgResult> r = pool_->read([&](PgConnection& db) {
    return db.query(
        "SELECT run_id, status, start_request_id FROM current_runs "
        "WHERE shard_id = $1 AND namespace = $2 AND workflow_id = $3",
        PgParams().add(shard(namespace_id, workflow_id)).add_text(namespace_id).add_text(workflow_id));
  });
  if (!r) return r.status();
  if (r->rows() == 0) return Status::not_found("workflow id '" + workflow_id + "' has no runs");
  CurrentRun c;
  c.namespace_id = namespace_id;
  c.workflow_id = workflow_id;
  c.run_id = r->get_bytes(0, 0);
  c.status = static_cast<v1::WorkflowExecutionStatus>(r->get_int(0, 1));
  c.start_request_id = r->get_bytes(0, 2);
  return c;
}

Result<std::vector<HistoryBatch>> PostgresStore::read_history(const ExecutionKey& key, int64_t from_event_id,
                                                              int max_batches) {
  Result<PgResult> r = pool_->read([&](PgConnection& db) {
    return db.query(
        "SELECT first_event_id, last_event_id, data FROM history "
        "WHERE shard_id = $1 AND namespace = $2 AND workflow_id = $3 AND run_id = $4 AND last_event_id >= $5 "
        "ORDER BY last_event_id LIMIT $6",
        PgParams()
            .add(shard(key.namespace_id, key.workflow_id))
            .add_text(key.namespace_id)
            .add_text(key.workflow_id)
            .add_text(key.run_id)
            .add(from_event_id)
            .add(max_batches));
  });
  if (!r) return r.status();
  std::vector<HistoryBatch> out;
  for (int i = 0; i < r->rows(); ++i) out.push_back({r->get_int(i, 0), r->get_int(i, 1), r->get_bytes(i, 2)});
  return out;
}

Result<std::vector<TaskRecord>> PostgresStore::load_tasks(int64_t after_task_id, int limit) {
  Result<PgResult> r = pool_->read([&](PgConnection& db) {
    return db.query(
        "SELECT task_id, kind, queue, namespace, workflow_id, run_id, payload FROM tasks "
        "WHERE task_id > $1 ORDER BY task_id LIMIT $2",
        PgParams().add(after_task_id).add(limit));
  });
  if (!r) return r.status();
  std::vector<TaskRecord> out;
  for (int i = 0; i < r->rows(); ++i) {
    out.push_back({r->get_int(i, 0), static_cast<TaskKind>(r->get_int(i, 1)), r->get_bytes(i, 2), key_at(*r, i, 3),
                   r->get_bytes(i, 6)});
  }
  return out;
}

Result<std::vector<TimerRecord>> PostgresStore::due_timers(TimePoint until, int limit) {
  // Only the shards this node serves (all of them: no filter).
  const std::string served = leases_->served_array();
  PgParams params;
  params.add(to_unix_nanos(until)).add(limit);
  std::string sql = "SELECT timer_id, fire_at, namespace, workflow_id, run_id, payload FROM timers WHERE fire_at <= $1";
  if (!served.empty()) {
    sql += " AND shard_id = ANY($3::text::bigint[])";
    params.add_text(served);
  }
  sql += " ORDER BY fire_at, timer_id LIMIT $2";
  Result<PgResult> r = pool_->read([&](PgConnection& db) { return db.query(sql, params); });
  if (!r) return r.status();
  std::vector<TimerRecord> out;
  for (int i = 0; i < r->rows(); ++i) {
    out.push_back({r->get_int(i, 0), from_unix_nanos(r->get_int(i, 1)), key_at(*r, i, 2), r->get_bytes(i, 5)});
  }
  return out;
}

Result<std::optional<TimePoint>> PostgresStore::next_timer_time() {
  const std::string served = leases_->served_array();
  Result<PgResult> r = pool_->read([&](PgConnection& db) {
    return served.empty() ? db.query("SELECT min(fire_at) FROM timers")
                          : db.query("SELECT min(fire_at) FROM timers WHERE shard_id = ANY($1::text::bigint[])",
                                     PgParams().add_text(served));
  });
  if (!r) return r.status();
  if (r->rows() == 0 || r->is_null(0, 0)) return std::optional<TimePoint>();
  return std::optional<TimePoint>(from_unix_nanos(r->get_int(0, 0)));
}

Result<VisibilityPage> PostgresStore::list_executions(const VisibilityQuery& q) {
  if (q.page_size < 1 || q.page_size > 1000) {
    return Status::invalid_argument("page_size must be between 1 and 1000, got " + std::to_string(q.page_size));
  }
  PgParams params;
  params.add_text(q.namespace_id);
  std::string sql =
      "SELECT namespace, workflow_id, run_id, workflow_type, task_queue, status, start_time, close_time "
      "FROM visibility WHERE namespace = $1";
  auto next = [&params] { return "$" + std::to_string(params.size() + 1); };
  if (q.workflow_type) {
    sql += " AND workflow_type = " + next();
    params.add_text(*q.workflow_type);
  }
  if (q.task_queue) {
    sql += " AND task_queue = " + next();
    params.add_text(*q.task_queue);
  }
  if (q.status) {
    sql += " AND status = " + next();
    params.add(static_cast<int64_t>(*q.status));
  }
  if (q.started_after) {
    sql += " AND start_time >= " + next();
    params.add(to_unix_nanos(*q.started_after));
  }
  if (q.started_before) {
    sql += " AND start_time < " + next();
    params.add(to_unix_nanos(*q.started_before));
  }
  if (!q.workflow_id_prefix.empty()) {
    // left() compares the prefix as it is: no LIKE wildcards to escape.
    const std::string p = next();
    sql += " AND left(workflow_id, length(" + p + ")) = " + p;
    params.add_text(q.workflow_id_prefix);
  }
  if (!q.page_token.empty()) {
    int64_t token_start = 0;
    std::string token_workflow, token_run;
    if (!decode_page_token(q.page_token, token_start, token_workflow, token_run)) {
      return Status::invalid_argument("malformed page_token");
    }
    const std::string a = next();
    params.add(token_start);
    const std::string b = next();
    params.add_text(token_workflow);
    const std::string c = next();
    params.add_text(token_run);
    sql += " AND (start_time, workflow_id, run_id) < (" + a + ", " + b + ", " + c + ")";
  }
  sql += " ORDER BY start_time DESC, workflow_id DESC, run_id DESC LIMIT " + next();
  params.add(q.page_size + 1);  // one extra row tells whether another page exists

  Result<PgResult> r = pool_->read([&](PgConnection& db) { return db.query(sql, params); });
  if (!r) return r.status();
  VisibilityPage page;
  for (int i = 0; i < r->rows(); ++i) {
    VisibilityRecord v;
    v.key = key_at(*r, i, 0);
    v.workflow_type = r->get_bytes(i, 3);
    v.task_queue = r->get_bytes(i, 4);
    v.status = static_cast<v1::WorkflowExecutionStatus>(r->get_int(i, 5));
    v.start_time = from_unix_nanos(r->get_int(i, 6));
    if (!r->is_null(i, 7)) v.close_time = from_unix_nanos(r->get_int(i, 7));
    page.records.push_back(std::move(v));
  }
  if (static_cast<int>(page.records.size()) > q.page_size) {
    page.records.pop_back();
    page.next_page_token = encode_page_token(page.records.back());
  }
  return page;
}

Result<std::vector<ClosedRun>> PostgresStore::closed_runs(const std::string& namespace_id, TimePoint closed_before,
                                                          const std::optional<ClosedRun>& after, int limit) {
  PgParams params;
  params.add(to_unix_nanos(closed_before)).add_text(namespace_id).add(limit);
  std::string sql =
      "SELECT namespace, workflow_id, run_id, close_time FROM visibility "
      "WHERE namespace = $2 AND close_time IS NOT NULL AND close_time < $1";
  if (after) {
    sql += " AND (close_time, workflow_id, run_id) > ($4, $5, $6)";
    params.add(to_unix_nanos(after->close_time)).add_text(after->key.workflow_id).add_text(after->key.run_id);
  }
  sql += " ORDER BY close_time, workflow_id, run_id LIMIT $3";
  Result<PgResult> r = pool_->read([&](PgConnection& db) { return db.query(sql, params); });
  if (!r) return r.status();
  std::vector<ClosedRun> out;
  for (int i = 0; i < r->rows(); ++i) out.push_back({key_at(*r, i, 0), from_unix_nanos(r->get_int(i, 3))});
  return out;
}

Result<std::vector<NamespaceRecord>> PostgresStore::list_namespaces() {
  Result<PgResult> r = pool_->read([](PgConnection& db) {
    return db.query("SELECT name, description, retention_seconds, created_at FROM namespaces ORDER BY name");
  });
  if (!r) return r.status();
  std::vector<NamespaceRecord> out;
  for (int i = 0; i < r->rows(); ++i) {
    NamespaceRecord n;
    n.name = r->get_bytes(i, 0);
    n.description = r->get_bytes(i, 1);
    if (!r->is_null(i, 2)) n.retention = std::chrono::seconds(r->get_int(i, 2));
    n.created_at = from_unix_nanos(r->get_int(i, 3));
    out.push_back(std::move(n));
  }
  return out;
}

Status PostgresStore::create_namespace(const NamespaceRecord& record) {
  PgParams p;
  p.add_text(record.name).add_text(record.description);
  add_retention(p, record.retention).add(to_unix_nanos(record.created_at));
  return pool_->transaction([&](PgConnection& db) -> Status {
    Result<PgResult> r = db.query(
        "INSERT INTO namespaces (name, description, retention_seconds, created_at) VALUES ($1, $2, $3, $4) "
        "ON CONFLICT (name) DO NOTHING",
        p);
    if (!r) return r.status();
    if (r->affected() == 0) return Status::already_exists("namespace '" + record.name + "' exists already");
    return Status::ok();
  });
}

Status PostgresStore::update_namespace(const NamespaceRecord& record) {
  PgParams p;
  p.add_text(record.name).add_text(record.description);
  add_retention(p, record.retention);
  return pool_->transaction([&](PgConnection& db) -> Status {
    Result<PgResult> r = db.query("UPDATE namespaces SET description = $2, retention_seconds = $3 WHERE name = $1", p);
    if (!r) return r.status();
    if (r->affected() == 0) return Status::not_found("namespace '" + record.name + "' does not exist");
    return Status::ok();
  });
}

Result<std::vector<ApiKeyRecord>> PostgresStore::api_keys() {
  return pool_->read([](PgConnection& db) { return read_postgres_api_keys(db); });
}

}  // namespace reprise::engine
