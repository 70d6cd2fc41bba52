#include "engine/store/sqlite_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <future>
#include <system_error>

#include "engine/store/api_keys.hpp"
#include "engine/store/bind_key.hpp"
#include "engine/store/file_check.hpp"
#include "engine/store/schema.hpp"
#include "engine/store/visibility_page_token.hpp"

namespace reprise::engine {

namespace {

ExecutionKey key_at(const Statement& s, int first_column) {
  return {s.column_text(first_column), s.column_text(first_column + 1), s.column_text(first_column + 2)};
}

// SQLite's own message for a missing directory is "unable to open database
// file"; say which part of the path is wrong instead.
Status check_path(const std::string& path) {
  if (path.empty()) return Status::invalid_argument("database path is empty");
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) return Status::failed_precondition("database path '" + path + "' is a directory");
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) {
    return Status::failed_precondition("cannot create database '" + path + "': directory '" + dir.string() +
                                       "' does not exist");
  }
  return Status::ok();
}

// Writes a new database at `path` whole: the schema goes into a file beside
// it, in rollback-journal mode so that the file alone holds it once
// committed, which is then linked to `path`. A crash leaves at most that
// temporary file, never an empty or half-made file at `path` (which the next
// open would refuse). If another process created `path` meanwhile, its file
// wins and is opened.
Status create_database(const std::string& path) {
  namespace fs = std::filesystem;
  const std::string temp = path + ".new-" + std::to_string(::getpid());
  auto remove_temp = [&temp] {
    std::error_code ec;
    for (const char* suffix : {"", "-journal", "-wal", "-shm"}) fs::remove(temp + suffix, ec);
  };
  remove_temp();  // left by a crashed creator that had this pid
  Status made;
  {
    Result<std::unique_ptr<SqliteDb>> db = SqliteDb::open_as_is(temp, true);
    made = db.is_ok() ? (*db)->exec("PRAGMA synchronous=FULL") : db.status();
    if (made.is_ok()) made = migrate(**db, schema_migrations());
  }  // closed: the commit is in the file
  if (!made.is_ok()) {
    remove_temp();
    return made.with_context("cannot create database '" + path + "' (writing it as '" + temp + "' first)");
  }
  // link() fails rather than replace a file; rename() is for file systems
  // without hard links.
  if (::link(temp.c_str(), path.c_str()) != 0 && errno != EEXIST && ::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    remove_temp();
    return Status::failed_precondition("cannot create database '" + path + "': " + std::strerror(err));
  }
  remove_temp();
  const fs::path dir = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);  // the new name survives a power loss
    ::close(fd);
  }
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<SqliteStore>> SqliteStore::open(const std::string& path, StoreOptions options) {
  REPRISE_RETURN_IF_ERROR(check_path(path));
  DatabaseLock lock;  // taken before anything reads or creates the file
  if (options.lock_file) {
    Result<DatabaseLock> acquired = DatabaseLock::acquire(path);
    if (!acquired) return acquired.status();
    lock = std::move(*acquired);
  }
  const Clock& clock = options.clock != nullptr ? *options.clock : SystemClock::instance();

  OpenReport report;
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) {
    REPRISE_RETURN_IF_ERROR(create_database(path));
    report.created = true;
  }
  // Look at the file before anything writes to it: configure() sets WAL mode,
  // which rewrites the header of a file in another mode (someone else's
  // database) and turns an empty file into an empty database.
  REPRISE_RETURN_IF_ERROR(check_file_before_open(path, options.init_empty_file));
  Result<std::unique_ptr<SyncCountingVfs>> vfs = SyncCountingVfs::create(options.vfs);
  if (!vfs) return vfs.status();
  const std::string& vfs_name = (*vfs)->name();
  Result<std::unique_ptr<SqliteDb>> writer = SqliteDb::open_as_is(path, false, vfs_name);
  if (!writer) return writer.status();
  Result<int> version = read_schema_version(**writer);
  if (!version) return version.status();
  if (*version == 0 && !report.created && !options.init_empty_file) {
    return Status::failed_precondition(
        "database '" + path +
        "' is an existing empty SQLite database (no tables). Refusing to start a new database in it, in case it is "
        "one that was lost; to start a new database, remove the file (a missing file is created) or allow it "
        "(reprise-server --init-empty-file)");
  }
  if (*version == 0) report.created = true;  // a new database, in the empty file it was allowed to use
  // (A newer schema is refused by migrate() below, without reading the file.)
  if (*version > 0 && *version <= current_schema_version() && options.quick_check && !report.created) {
    Result<IntegrityReport> checked = check_integrity(**writer, false);
    if (!checked) return checked.status().with_context("PRAGMA quick_check");  // it could not run
    if (!checked->ok()) {
      const auto& problems = checked->problems;
      std::string found;
      for (size_t i = 0; i < problems.size() && i < 5; ++i) found += (i == 0 ? "" : "; ") + problems[i];
      if (problems.size() > 5) found += "; and more (reprise admin check --db lists them)";
      return Status::data_loss("database '" + path + "' is damaged: PRAGMA quick_check found " + found +
                               ". Refusing to open it; restore it from a backup, or recover what is readable with "
                               "sqlite3's .recover. reprise-server --skip-quick-check opens it anyway (reads that "
                               "meet the damage then fail)");
    }
    report.quick_checked = true;
    report.pages = checked->pages;
    report.quick_check_time = checked->elapsed;
  }
  REPRISE_RETURN_IF_ERROR((*writer)->configure(options.durability));
  REPRISE_RETURN_IF_ERROR(migrate(**writer, schema_migrations()));
  Result<std::vector<TaskTokenKey>> token_keys = load_task_token_keys(**writer, options.rotate_task_token_key);
  if (!token_keys) return token_keys.status();

  std::vector<std::unique_ptr<SqliteDb>> readers;
  for (int i = 0; i < std::max(1, options.read_connections); ++i) {
    Result<std::unique_ptr<SqliteDb>> r = SqliteDb::open(path, false, options.durability, vfs_name);
    if (!r) return r.status();
    readers.push_back(std::move(*r));
  }
  Result<std::unique_ptr<SqliteDb>> checkpoint_db = SqliteDb::open(path, false, options.durability, vfs_name);
  if (!checkpoint_db) return checkpoint_db.status();
  std::vector<SqliteDb*> connections = {writer->get()};
  for (auto& reader : readers) connections.push_back(reader.get());
  for (SqliteDb* db : connections) {
    Result<ConnectionSettings> settings = db->settings();
    if (!settings) return settings.status();
    report.connections.push_back(*settings);
  }
  auto commits = std::make_unique<std::atomic<int64_t>>(0);
  (*writer)->count_commits(commits.get());
  for (auto& reader : readers) reader->count_commits(commits.get());

  if (!options.writer_thread) options.checkpoints.runner = CheckpointOptions::Runner::kCaller;
  auto checkpointer = std::make_unique<WalCheckpointer>(std::move(*checkpoint_db), options.checkpoints);
  (*writer)->replace_auto_checkpoint([c = checkpointer.get()](int64_t wal_pages) { c->wal_committed(wal_pages); });

  auto pool = std::make_unique<ReadPool>(std::move(readers));
  auto tw = std::make_unique<TransitionWriter>(std::move(*writer), options.max_batch, std::move(options.fault_hook),
                                               options.wait_when_full, std::move(options.on_write_stall),
                                               options.writer_thread, checkpointer.get());
  auto blobs = std::make_unique<SqliteBlobStore>(*tw, *pool, clock, options.blobs);
  auto store = std::unique_ptr<SqliteStore>(new SqliteStore(std::move(*vfs), path, report, std::move(commits),
                                                            std::move(checkpointer), std::move(pool), std::move(tw),
                                                            std::move(blobs), std::move(*token_keys)));
  store->lock_ = std::move(lock);
  return store;
}

SqliteStore::SqliteStore(std::unique_ptr<SyncCountingVfs> vfs, std::string path, OpenReport report,
                         std::unique_ptr<std::atomic<int64_t>> commits, std::unique_ptr<WalCheckpointer> checkpointer,
                         std::unique_ptr<ReadPool> readers, std::unique_ptr<TransitionWriter> writer,
                         std::unique_ptr<SqliteBlobStore> blobs, std::vector<TaskTokenKey> task_token_keys)
    : vfs_(std::move(vfs)),
      path_(std::move(path)),
      report_(report),
      commits_(std::move(commits)),
      checkpointer_(std::move(checkpointer)),
      readers_(std::move(readers)),
      writer_(std::move(writer)),
      blobs_(std::move(blobs)),
      task_token_keys_(std::move(task_token_keys)) {}

SqliteStore::~SqliteStore() {
  writer_.reset();  // commits or fails everything queued first
}

StorageStats SqliteStore::storage_stats() const {
  StorageStats stats;
  stats.writes = writer_->stats();
  stats.checkpoints = checkpointer_->stats();
  stats.wal_syncs = vfs_->wal_syncs();
  stats.database_syncs = vfs_->database_syncs();
  stats.sync_time = vfs_->sync_time();
  return stats;
}

void SqliteStore::commit_async(Transition transition, CommitCallback done) {
  writer_->submit(std::move(transition), std::move(done));
}

Result<ExecutionRecord> SqliteStore::get_execution(const ExecutionKey& key) {
  ReadPool::Lease db = readers_->acquire();
  Result<Statement> s = db->prepare(
      "SELECT version, next_event_id, status, state FROM executions "
      "WHERE namespace = ?1 AND workflow_id = ?2 AND run_id = ?3");
  if (!s) return s.status();
  Result<bool> row = bind_key(*s, key).step();
  if (!row) return row.status();
  if (!*row) return Status::not_found("execution " + key.to_string() + " does not exist");
  ExecutionRecord r;
  r.key = key;
  r.version = s->column_int(0);
  r.next_event_id = s->column_int(1);
  r.status = static_cast<v1::WorkflowExecutionStatus>(s->column_int(2));
  r.state = s->column_blob(3);
  return r;
}

Result<CurrentRun> SqliteStore::get_current_run(const std::string& namespace_id, const std::string& workflow_id) {
  ReadPool::Lease db = readers_->acquire();
  Result<Statement> s = db->prepare(
      "SELECT run_id, status, start_request_id FROM current_runs WHERE namespace = ?1 AND workflow_id = ?2");
  if (!s) return s.status();
  Result<bool> row = s->bind(1, namespace_id).bind(2, workflow_id).step();
  if (!row) return row.status();
  if (!*row) return Status::not_found("workflow id '" + workflow_id + "' has no runs");
  CurrentRun r;
  r.namespace_id = namespace_id;
  r.workflow_id = workflow_id;
  r.run_id = s->column_text(0);
  r.status = static_cast<v1::WorkflowExecutionStatus>(s->column_int(1));
  r.start_request_id = s->column_text(2);
  return r;
}

Result<std::vector<HistoryBatch>> SqliteStore::read_history(const ExecutionKey& key, int64_t from_event_id,
                                                            int max_batches) {
  ReadPool::Lease db = readers_->acquire();
  Result<Statement> s = db->prepare(
      "SELECT first_event_id, last_event_id, data FROM history "
      "WHERE namespace = ?1 AND workflow_id = ?2 AND run_id = ?3 AND last_event_id >= ?4 "
      "ORDER BY last_event_id LIMIT ?5");
  if (!s) return s.status();
  bind_key(*s, key).bind(4, from_event_id).bind(5, max_batches);
  std::vector<HistoryBatch> out;
  while (true) {
    Result<bool> row = s->step();
    if (!row) return row.status();
    if (!*row) break;
    out.push_back({s->column_int(0), s->column_int(1), s->column_blob(2)});
  }
  return out;
}

Result<std::vector<TaskRecord>> SqliteStore::load_tasks(int64_t after_task_id, int limit) {
  ReadPool::Lease db = readers_->acquire();
  Result<Statement> s = db->prepare(
      "SELECT task_id, kind, queue, namespace, workflow_id, run_id, payload FROM tasks "
      "WHERE task_id > ?1 ORDER BY task_id LIMIT ?2");
  if (!s) return s.status();
  s->bind(1, after_task_id).bind(2, limit);
  std::vector<TaskRecord> out;
  while (true) {
    Result<bool> row = s->step();
    if (!row) return row.status();
    if (!*row) break;
    out.push_back({s->column_int(0), static_cast<TaskKind>(s->column_int(1)), s->column_text(2), key_at(*s, 3),
                   s->column_blob(6)});
  }
  return out;
}

Result<std::vector<TimerRecord>> SqliteStore::due_timers(TimePoint until, int limit) {
  ReadPool::Lease db = readers_->acquire();
  Result<Statement> s = db->prepare(
      "SELECT timer_id, fire_at, namespace, workflow_id, run_id, payload FROM timers "
      "WHERE fire_at <= ?1 ORDER BY fire_at, timer_id LIMIT ?2");
  if (!s) return s.status();
  s->bind(1, to_unix_nanos(until)).bind(2, limit);
  std::vector<TimerRecord> out;
  while (true) {
    Result<bool> row = s->step();
    if (!row) return row.status();
    if (!*row) break;
    out.push_back({s->column_int(0), from_unix_nanos(s->column_int(1)), key_at(*s, 2), s->column_blob(5)});
  }
  return out;
}

Result<std::optional<TimePoint>> SqliteStore::next_timer_time() {
  ReadPool::Lease db = readers_->acquire();
  Result<Statement> s = db->prepare("SELECT min(fire_at) FROM timers");
  if (!s) return s.status();
  Result<bool> row = s->step();
  if (!row) return row.status();
  if (!*row || s->column_is_null(0)) return std::optional<TimePoint>();
  return std::optional<TimePoint>(from_unix_nanos(s->column_int(0)));
}

Result<VisibilityPage> SqliteStore::list_executions(const VisibilityQuery& q) {
  if (q.page_size < 1 || q.page_size > 1000) {
    return Status::invalid_argument("page_size must be between 1 and 1000, got " + std::to_string(q.page_size));
  }
  std::string sql =
      "SELECT namespace, workflow_id, run_id, workflow_type, task_queue, status, start_time, close_time "
      "FROM visibility WHERE namespace = ?1";
  if (q.workflow_type) sql += " AND workflow_type = ?2";
  if (q.task_queue) sql += " AND task_queue = ?3";
  if (q.status) sql += " AND status = ?4";
  if (q.started_after) sql += " AND start_time >= ?5";
  if (q.started_before) sql += " AND start_time < ?6";
  if (!q.workflow_id_prefix.empty()) sql += " AND substr(workflow_id, 1, length(?11)) = ?11";
  int64_t token_start = 0;
  std::string token_workflow, token_run;
  if (!q.page_token.empty()) {
    if (!decode_page_token(q.page_token, token_start, token_workflow, token_run)) {
      return Status::invalid_argument("malformed page_token");
    }
    sql += " AND (start_time, workflow_id, run_id) < (?7, ?8, ?9)";
  }
  sql += " ORDER BY start_time DESC, workflow_id DESC, run_id DESC LIMIT ?10";

  ReadPool::Lease db = readers_->acquire();
  Result<Statement> s = db->prepare_uncached(sql);
  if (!s) return s.status();
  s->bind(1, q.namespace_id);
  if (q.workflow_type) s->bind(2, *q.workflow_type);
  if (q.task_queue) s->bind(3, *q.task_queue);
  if (q.status) s->bind(4, static_cast<int64_t>(*q.status));
  if (q.started_after) s->bind(5, to_unix_nanos(*q.started_after));
  if (q.started_before) s->bind(6, to_unix_nanos(*q.started_before));
  if (!q.page_token.empty()) s->bind(7, token_start).bind(8, token_workflow).bind(9, token_run);
  if (!q.workflow_id_prefix.empty()) s->bind(11, q.workflow_id_prefix);
  s->bind(10, q.page_size + 1);  // one extra row tells whether another page exists

  VisibilityPage page;
  while (true) {
    Result<bool> row = s->step();
    if (!row) return row.status();
    if (!*row) break;
    VisibilityRecord r;
    r.key = key_at(*s, 0);
    r.workflow_type = s->column_text(3);
    r.task_queue = s->column_text(4);
    r.status = static_cast<v1::WorkflowExecutionStatus>(s->column_int(5));
    r.start_time = from_unix_nanos(s->column_int(6));
    if (!s->column_is_null(7)) r.close_time = from_unix_nanos(s->column_int(7));
    page.records.push_back(std::move(r));
  }
  if (static_cast<int>(page.records.size()) > q.page_size) {
    page.records.pop_back();
    page.next_page_token = encode_page_token(page.records.back());
  }
  return page;
}

Result<std::vector<ClosedRun>> SqliteStore::closed_runs(const std::string& namespace_id, TimePoint closed_before,
                                                        const std::optional<ClosedRun>& after, int limit) {
  // Both read visibility_by_close, which holds only closed runs, in this order.
  static constexpr const char* kFirstPage =
      "SELECT namespace, workflow_id, run_id, close_time FROM visibility "
      "WHERE namespace = ?3 AND close_time IS NOT NULL AND close_time < ?1 "
      "ORDER BY close_time, workflow_id, run_id LIMIT ?6";
  static constexpr const char* kNextPage =
      "SELECT namespace, workflow_id, run_id, close_time FROM visibility "
      "WHERE namespace = ?3 AND close_time IS NOT NULL AND close_time < ?1 "
      "AND (close_time, workflow_id, run_id) > (?2, ?4, ?5) "
      "ORDER BY close_time, workflow_id, run_id LIMIT ?6";
  ReadPool::Lease db = readers_->acquire();
  Result<Statement> s = db->prepare(after ? kNextPage : kFirstPage);
  if (!s) return s.status();
  s->bind(1, to_unix_nanos(closed_before)).bind(3, namespace_id).bind(6, limit);
  if (after) {
    s->bind(2, to_unix_nanos(after->close_time)).bind(4, after->key.workflow_id).bind(5, after->key.run_id);
  }
  std::vector<ClosedRun> out;
  while (true) {
    Result<bool> row = s->step();
    if (!row) return row.status();
    if (!*row) break;
    out.push_back({key_at(*s, 0), from_unix_nanos(s->column_int(3))});
  }
  return out;
}

Status SqliteStore::write_now(TransitionWriter::Job job) {
  std::promise<Status> committed;
  writer_->submit_job(std::move(job), [&committed](Status s) { committed.set_value(std::move(s)); });
  return committed.get_future().get();
}

Result<std::vector<NamespaceRecord>> SqliteStore::list_namespaces() {
  ReadPool::Lease db = readers_->acquire();
  Result<Statement> s =
      db->prepare("SELECT name, description, retention_seconds, created_at FROM namespaces ORDER BY name");
  if (!s) return s.status();
  std::vector<NamespaceRecord> out;
  while (true) {
    Result<bool> row = s->step();
    if (!row) return row.status();
    if (!*row) return out;
    NamespaceRecord r;
    r.name = s->column_text(0);
    r.description = s->column_text(1);
    if (!s->column_is_null(2)) r.retention = std::chrono::seconds(s->column_int(2));
    r.created_at = from_unix_nanos(s->column_int(3));
    out.push_back(std::move(r));
  }
}

namespace {

Statement& bind_retention(Statement& s, int index, const std::optional<std::chrono::seconds>& retention) {
  return retention ? s.bind(index, static_cast<int64_t>(retention->count())) : s.bind_null(index);
}

}  // namespace

Status SqliteStore::create_namespace(const NamespaceRecord& record) {
  bool created = false;
  REPRISE_RETURN_IF_ERROR(write_now([&](SqliteDb& db) -> Status {
    Result<Statement> s = db.prepare(
        "INSERT INTO namespaces (name, description, retention_seconds, created_at) VALUES (?1, ?2, ?3, ?4) "
        "ON CONFLICT (name) DO NOTHING");
    if (!s) return s.status();
    s->bind(1, record.name).bind(2, record.description).bind(4, to_unix_nanos(record.created_at));
    REPRISE_RETURN_IF_ERROR(bind_retention(*s, 3, record.retention).run());
    created = db.changes() > 0;
    return Status::ok();
  }));
  if (!created) return Status::already_exists("namespace '" + record.name + "' exists already");
  return Status::ok();
}

Status SqliteStore::update_namespace(const NamespaceRecord& record) {
  bool found = false;
  REPRISE_RETURN_IF_ERROR(write_now([&](SqliteDb& db) -> Status {
    Result<Statement> s = db.prepare("UPDATE namespaces SET description = ?2, retention_seconds = ?3 WHERE name = ?1");
    if (!s) return s.status();
    s->bind(1, record.name).bind(2, record.description);
    REPRISE_RETURN_IF_ERROR(bind_retention(*s, 3, record.retention).run());
    found = db.changes() > 0;
    return Status::ok();
  }));
  if (!found) return Status::not_found("namespace '" + record.name + "' does not exist");
  return Status::ok();
}

Result<std::vector<ApiKeyRecord>> SqliteStore::api_keys() {
  ReadPool::Lease db = readers_->acquire();
  return read_api_keys(*db);
}

}  // namespace reprise::engine
