#include "engine/store/sqlite_db.hpp"

#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include <filesystem>

namespace reprise::engine {

namespace {

// Why a write to the database at `path` could not succeed, or "" if neither
// the disk nor the process's file size limit explains it.
std::string diagnose_write_failure(const std::string& path) {
  const std::filesystem::path p(path);
  struct statvfs fs {};
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
  if (::statvfs(dir.c_str(), &fs) == 0 && static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize < (1u << 20)) {
    return "the disk holding it is full";
  }
  rlimit limit{};
  if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    std::error_code ec;
    for (const std::string& f : {path, path + "-wal"}) {
      const auto size = std::filesystem::file_size(f, ec);
      // A write that would cross the limit fails; allow for a page or so.
      if (!ec && size + (64u << 10) >= limit.rlim_cur) {
        return "the file size limit (ulimit -f) of " + std::to_string(limit.rlim_cur) + " bytes was reached";
      }
    }
  }
  return "";
}

StatusCode code_for(int rc) {
  switch (rc & 0xff) {
    case SQLITE_FULL:
      return StatusCode::kResourceExhausted;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return StatusCode::kDataLoss;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return StatusCode::kPermissionDenied;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return StatusCode::kUnavailable;
    case SQLITE_CONSTRAINT:
      return StatusCode::kFailedPrecondition;
    case SQLITE_CANTOPEN:
      return StatusCode::kFailedPrecondition;
    case SQLITE_TOOBIG:
      return StatusCode::kResourceExhausted;
    case SQLITE_IOERR:
      return StatusCode::kUnavailable;
    default:
      return StatusCode::kInternal;
  }
}
}  // namespace

Statement::~Statement() {
  if (stmt_ != nullptr && owned_) {
    sqlite3_finalize(stmt_);
  } else if (stmt_ != nullptr) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
}

Statement& Statement::bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}

Statement& Statement::bind(int index, std::string_view text) {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::bind_blob(int index, std::string_view bytes) {
  // A zero-length blob must still be a blob, not NULL.
  sqlite3_bind_blob64(stmt_, index, bytes.empty() ? "" : bytes.data(), bytes.size(), SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::bind_null(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

Result<bool> Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_->error(rc, sqlite3_sql(stmt_));
}

Status Statement::run() {
  while (true) {
    Result<bool> row = step();
    if (!row) return row.status();
    if (!*row) return Status::ok();
  }
}

int64_t Statement::column_int(int index) const { return sqlite3_column_int64(stmt_, index); }

std::string Statement::column_text(int index) const {
  const auto* p = sqlite3_column_text(stmt_, index);
  return p == nullptr ? std::string()
                      : std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, index));
}

std::string Statement::column_blob(int index) const { return std::string(column_blob_view(index)); }

std::string_view Statement::column_blob_view(int index) const {
  const void* p = sqlite3_column_blob(stmt_, index);
  const int n = sqlite3_column_bytes(stmt_, index);
  return p == nullptr ? std::string_view() : std::string_view(static_cast<const char*>(p), n);
}

bool Statement::column_is_null(int index) const { return sqlite3_column_type(stmt_, index) == SQLITE_NULL; }

Result<std::unique_ptr<SqliteDb>> SqliteDb::connect(const std::string& path, int flags, const std::string& vfs) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, vfs.empty() ? nullptr : vfs.c_str());
  std::unique_ptr<SqliteDb> db(new SqliteDb(raw, path));
  if (rc != SQLITE_OK) {
    if (raw == nullptr) return Status::resource_exhausted("out of memory opening database '" + path + "'");
    return db->error(rc, "cannot open");
  }
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, static_cast<int>(kBusyTimeout.count()));
  return db;
}

Result<std::unique_ptr<SqliteDb>> SqliteDb::open_as_is(const std::string& path, bool create, const std::string& vfs) {
  Result<std::unique_ptr<SqliteDb>> db = connect(path, SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0), vfs);
  if (!db) return db;
  // SQLite quietly falls back to read-only when it cannot write the file.
  if (sqlite3_db_readonly((*db)->handle(), "main") == 1) {
    return Status::permission_denied("database '" + path +
                                     "' can only be opened read-only (a read-only file, directory or file system); "
                                     "the store needs to write to it");
  }
  return db;
}

Result<std::unique_ptr<SqliteDb>> SqliteDb::open_read_only(const std::string& path) {
  return connect(path, SQLITE_OPEN_READONLY, "");
}

Status SqliteDb::configure(Durability durability) {
  // journal_mode reads the header: the first statement to notice a file that
  // is not a database.
  REPRISE_RETURN_IF_ERROR(exec("PRAGMA journal_mode=WAL"));
  REPRISE_RETURN_IF_ERROR(
      exec(durability == Durability::kFull ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL"));
  REPRISE_RETURN_IF_ERROR(exec("PRAGMA foreign_keys=ON"));
  // Savepoint sub-journals and statement journals stay in memory: on disk
  // they cost a pwrite per touched page per transition and protect nothing
  // (the WAL does that).
  return exec("PRAGMA temp_store=MEMORY");
}

Result<ConnectionSettings> SqliteDb::settings() {
  ConnectionSettings settings;
  {
    Result<Statement> s = prepare_uncached("PRAGMA synchronous");
    if (!s) return s.status();
    Result<bool> row = s->step();
    if (!row) return row.status();
    if (*row) settings.synchronous = static_cast<int>(s->column_int(0));
  }
  Result<Statement> s = prepare_uncached("PRAGMA journal_mode");
  if (!s) return s.status();
  Result<bool> row = s->step();
  if (!row) return row.status();
  if (*row) settings.journal_mode = s->column_text(0);
  return settings;
}

Result<std::unique_ptr<SqliteDb>> SqliteDb::open(const std::string& path, bool create, Durability durability,
                                                 const std::string& vfs) {
  Result<std::unique_ptr<SqliteDb>> db = open_as_is(path, create, vfs);
  if (!db) return db;
  REPRISE_RETURN_IF_ERROR((*db)->configure(durability));
  return db;
}

SqliteDb::~SqliteDb() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  sqlite3_close_v2(db_);
}

Status SqliteDb::exec(const char* sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc != SQLITE_OK) return error(rc, sql);
  return Status::ok();
}

Status SqliteDb::exec_cached(const char* sql) {
  Result<Statement> s = prepare(sql);
  if (!s) return s.status();
  return s->run();
}

Result<Statement> SqliteDb::prepare(const char* sql) {
  auto it = cache_.find(sql);
  if (it != cache_.end()) return Statement(*this, it->second, false);
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) return error(rc, sql);
  cache_.emplace(sql, stmt);
  return Statement(*this, stmt, false);
}

Result<Statement> SqliteDb::prepare_uncached(const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr);
  if (rc != SQLITE_OK) return error(rc, sql);
  return Statement(*this, stmt, true);
}

int64_t SqliteDb::changes() const { return sqlite3_changes64(db_); }

void SqliteDb::count_commits(std::atomic<int64_t>* counter) {
  sqlite3_commit_hook(
      db_,
      [](void* c) {
        static_cast<std::atomic<int64_t>*>(c)->fetch_add(1, std::memory_order_relaxed);
        return 0;  // let the commit go ahead
      },
      counter);
}

void SqliteDb::replace_auto_checkpoint(std::function<void(int64_t)> after_commit) {
  // Both set the same hook: the automatic checkpoint off first, then ours.
  sqlite3_wal_autocheckpoint(db_, 0);
  after_commit_ = std::move(after_commit);
  sqlite3_wal_hook(
      db_,
      [](void* self, sqlite3*, const char*, int pages) {
        static_cast<SqliteDb*>(self)->after_commit_(pages);
        return SQLITE_OK;
      },
      this);
}

Result<CheckpointOutcome> SqliteDb::checkpoint(CheckpointMode mode) {
  const int sqlite_mode = mode == CheckpointMode::kPassive ? SQLITE_CHECKPOINT_PASSIVE : SQLITE_CHECKPOINT_RESTART;
  int wal_pages = 0, copied = 0;
  const int rc = sqlite3_wal_checkpoint_v2(db_, nullptr, sqlite_mode, &wal_pages, &copied);
  if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY) return error(rc, "checkpoint");
  return CheckpointOutcome{(rc & 0xff) == SQLITE_BUSY, wal_pages, copied};
}

void SqliteDb::set_busy_timeout(std::chrono::milliseconds timeout) {
  sqlite3_busy_timeout(db_, static_cast<int>(timeout.count()));
}

bool SqliteDb::in_transaction() const { return sqlite3_get_autocommit(db_) == 0; }

Status SqliteDb::error(int rc, std::string_view what) const {
  std::string msg = "database '" + path_ + "': ";
  msg += (db_ != nullptr && sqlite3_errcode(db_) == rc) ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  StatusCode code = code_for(rc);
  if ((rc & 0xff) == SQLITE_FULL || rc == SQLITE_IOERR_WRITE || rc == SQLITE_IOERR_FSYNC) {
    // SQLite reports a file-size limit as a plain I/O error, and errno is
    // often gone by now: look at the disk and the limit ourselves.
    std::string why = diagnose_write_failure(path_);
    if (!why.empty()) {
      msg += ": " + why;
      code = StatusCode::kResourceExhausted;
    }
    out_of_space_ = (rc & 0xff) == SQLITE_FULL || !why.empty();
  }
  if (!what.empty()) {
    msg += " (";
    msg += what.substr(0, 80);
    msg += ")";
  }
  return Status(code, std::move(msg));
}

}  // namespace reprise::engine
