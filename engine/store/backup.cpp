#include "engine/store/backup.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "engine/store/database_url.hpp"
#include "engine/store/file_check.hpp"
#include "engine/store/schema.hpp"
#include "engine/store/sqlite_db.hpp"

namespace reprise::engine {

namespace {

namespace fs = std::filesystem;

Status fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) return Status::internal("cannot open '" + path + "' to fsync it: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return Status::internal("fsync of '" + path + "' failed: " + std::strerror(err));
  return Status::ok();
}

void remove_with_journals(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-journal", "-wal", "-shm"}) fs::remove(path + suffix, ec);
}

// Copies every page of `from` into `to` in one step: one read transaction on
// `from`, so one commit's snapshot.
Status copy_pages(SqliteDb& from, SqliteDb& to, int64_t& pages) {
  sqlite3_backup* backup = sqlite3_backup_init(to.handle(), "main", from.handle(), "main");
  if (backup == nullptr) return to.error(sqlite3_errcode(to.handle()), "sqlite3_backup_init");
  int rc = SQLITE_OK;
  do {
    rc = sqlite3_backup_step(backup, -1);
    // The source's writer holds a lock only for an instant (WAL): wait.
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) sqlite3_sleep(10);
  } while (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED);
  pages = sqlite3_backup_pagecount(backup);
  sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) return to.error(rc, "copying the database (sqlite3_backup_step)");
  return Status::ok();
}

}  // namespace

Result<BackupReport> backup_database(const std::string& source, const std::string& target, bool overwrite) {
  if (is_postgres_url(source)) {
    return Status::failed_precondition("'" + source +
                                       "' is a PostgreSQL database: this backup copies SQLite files; back up a "
                                       "PostgreSQL database with its own tools (pg_dump, pg_basebackup)");
  }
  const auto began = std::chrono::steady_clock::now();
  std::error_code ec;
  if (fs::exists(target, ec) && !overwrite) {
    return Status::already_exists("backup target '" + target + "' exists; remove it or pass --overwrite");
  }
  if (fs::weakly_canonical(source, ec) == fs::weakly_canonical(target, ec)) {
    return Status::invalid_argument("backup target '" + target + "' is the database itself");
  }
  if (!fs::exists(source, ec)) return Status::not_found("database '" + source + "' does not exist");
  REPRISE_RETURN_IF_ERROR(check_file_before_open(source, false));
  Result<std::unique_ptr<SqliteDb>> from = SqliteDb::open_read_only(source);
  if (!from) return from.status();
  Result<int> version = read_schema_version(**from);
  if (!version) return version.status();
  if (*version == 0) return Status::failed_precondition("database '" + source + "' is empty, not a Reprise database");

  const std::string temp = target + ".partial-" + std::to_string(::getpid());
  remove_with_journals(temp);
  BackupReport report;
  report.schema_version = *version;
  Status copied = [&]() -> Status {
    Result<std::unique_ptr<SqliteDb>> to = SqliteDb::open_as_is(temp, true);
    if (!to) return to.status();
    REPRISE_RETURN_IF_ERROR((*to)->exec("PRAGMA synchronous=FULL"));
    REPRISE_RETURN_IF_ERROR(copy_pages(**from, **to, report.pages));
    Result<IntegrityReport> checked = check_integrity(**to, false);
    if (!checked) return checked.status().with_context("checking the copy");
    if (!checked->ok()) return Status::data_loss("the copy fails quick_check: " + checked->problems.front());
    return Status::ok();
  }();  // the copy's connection is closed: everything is in its file
  if (copied.is_ok()) copied = fsync_path(temp, O_RDONLY);
  if (copied.is_ok() && ::rename(temp.c_str(), target.c_str()) != 0) {
    copied = Status::failed_precondition("cannot move the copy to '" + target + "': " + std::strerror(errno));
  }
  if (!copied.is_ok()) {
    remove_with_journals(temp);
    return copied.with_context("backup of '" + source + "' to '" + target + "'");
  }
  const fs::path dir = fs::path(target).has_parent_path() ? fs::path(target).parent_path() : fs::path(".");
  REPRISE_RETURN_IF_ERROR(fsync_path(dir.string(), O_RDONLY | O_DIRECTORY));  // the new name survives a power loss
  report.bytes = static_cast<int64_t>(fs::file_size(target, ec));
  report.elapsed = std::chrono::steady_clock::now() - began;
  return report;
}

}  // namespace reprise::engine
