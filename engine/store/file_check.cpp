#include "engine/store/file_check.hpp"

#include <filesystem>
#include <fstream>
#include <system_error>

#include "engine/store/database_url.hpp"
#include "engine/store/schema.hpp"

namespace reprise::engine {

namespace {

constexpr char kSqliteHeader[] = "SQLite format 3";  // and its NUL: the first 16 bytes of every SQLite file

}  // namespace

namespace {

// What is at `path`, from the file system and the first bytes, before SQLite
// is let near it.
struct FileShape {
  bool regular = false;  // an existing regular file; the rest is about it
  uintmax_t size = 0;
  uintmax_t wal_size = 0;  // of PATH-wal, 0 when missing
  bool readable = false;
  bool sqlite_header = false;
};

FileShape inspect(const std::string& path) {
  namespace fs = std::filesystem;
  FileShape shape;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return shape;
  shape.size = fs::file_size(path, ec);
  if (ec) return shape;
  shape.regular = true;
  const uintmax_t wal = fs::file_size(path + "-wal", ec);
  shape.wal_size = ec ? 0 : wal;
  std::ifstream in(path, std::ios::binary);
  shape.readable = in.is_open();
  char header[sizeof kSqliteHeader] = {};
  in.read(header, sizeof header);
  shape.sqlite_header = in.gcount() == static_cast<std::streamsize>(sizeof header) &&
                        std::string_view(header, sizeof header) == std::string_view(kSqliteHeader, sizeof header);
  return shape;
}

Status truncated_beside_wal(const std::string& path, const FileShape& shape) {
  return Status::data_loss("database '" + path + "' is empty (0 bytes) but its write-ahead log '" + path +
                           "-wal' holds " + std::to_string(shape.wal_size) +
                           " bytes: the database file was probably truncated or replaced. Refusing to open it "
                           "(SQLite would delete that log); copy both files somewhere safe and restore the database "
                           "from a backup");
}

Status not_sqlite(const std::string& path, const FileShape& shape) {
  return Status::data_loss("database '" + path + "' is not a SQLite database (" + std::to_string(shape.size) +
                           " bytes that do not start with SQLite's header). Refusing to open it: restore it from a "
                           "backup, or use another file");
}

}  // namespace

Status check_file_before_open(const std::string& path, bool allow_empty) {
  const FileShape shape = inspect(path);
  // Missing (created later), not a regular file or unreadable: SQLite's own
  // error says what it is.
  if (!shape.regular || !shape.readable) return Status::ok();
  if (shape.size == 0) {
    if (shape.wal_size > 0) return truncated_beside_wal(path, shape);
    if (allow_empty) return Status::ok();
    return Status::failed_precondition(
        "database '" + path +
        "' is an existing empty file (0 bytes). Refusing to start a new database in it: an empty file where a "
        "database should be is more often one lost to a truncation or a failed copy than a new one. To start a new "
        "database, remove the file (a missing file is created) or allow it (reprise-server --init-empty-file)");
  }
  if (!shape.sqlite_header) return not_sqlite(path, shape);
  return Status::ok();
}

Result<IntegrityReport> check_integrity(SqliteDb& db, bool full, int max_problems) {
  const auto start = std::chrono::steady_clock::now();
  IntegrityReport report;
  auto problem = [&report, max_problems](std::string text) {
    if (static_cast<int>(report.problems.size()) < max_problems) report.problems.push_back(std::move(text));
  };
  // A page so damaged that the check cannot walk it is a finding, not a
  // failure to check.
  auto run = [&](const std::string& sql, auto on_row) -> Status {
    Result<Statement> s = db.prepare_uncached(sql);
    if (!s) return s.status();
    while (true) {
      Result<bool> row = s->step();
      if (!row) return row.status();
      if (!*row) return Status::ok();
      on_row(*s);
    }
  };
  auto damaged_or = [&](Status s) -> Status {
    if (s.code() != StatusCode::kDataLoss) return s;
    problem("the check stopped: " + s.message());
    return Status::ok();
  };

  {
    Status s = run("PRAGMA page_count", [&](Statement& row) { report.pages = row.column_int(0); });
    REPRISE_RETURN_IF_ERROR(damaged_or(s));
  }
  const std::string check =
      std::string(full ? "PRAGMA integrity_check(" : "PRAGMA quick_check(") + std::to_string(max_problems) + ")";
  Status s = run(check, [&](Statement& row) {
    // "ok", or findings: one a row, several lines in a row at times, under
    // a "*** in database main ***" heading.
    const std::string text = row.column_text(0);
    if (text == "ok") return;
    size_t from = 0;
    while (from < text.size()) {
      size_t to = text.find('\n', from);
      if (to == std::string::npos) to = text.size();
      const std::string line = text.substr(from, to - from);
      if (!line.empty() && line.rfind("*** in database", 0) != 0) problem(line);
      from = to + 1;
    }
  });
  REPRISE_RETURN_IF_ERROR(damaged_or(s));
  if (full && report.ok()) {
    // Foreign keys are not part of integrity_check: blob chunks without their blob.
    s = run("PRAGMA foreign_key_check", [&](Statement& row) {
      problem("row " + std::to_string(row.column_int(1)) + " of table " + row.column_text(0) +
              " refers to a missing row of table " + row.column_text(2));
    });
    REPRISE_RETURN_IF_ERROR(damaged_or(s));
  }
  report.elapsed = std::chrono::steady_clock::now() - start;
  return report;
}

Result<DatabaseCheck> check_database_file(const std::string& path, bool full) {
  if (is_postgres_url(path)) {
    return Status::failed_precondition("'" + path +
                                       "' is a PostgreSQL database: this check reads SQLite files; check a "
                                       "PostgreSQL database with its own tools (pg_amcheck)");
  }
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::not_found("database '" + path + "' does not exist");
  if (std::filesystem::is_directory(path, ec)) {
    return Status::failed_precondition("database path '" + path + "' is a directory");
  }
  const FileShape shape = inspect(path);
  if (shape.regular && shape.size == 0) {
    if (shape.wal_size > 0) return truncated_beside_wal(path, shape);
    return Status::failed_precondition("database '" + path +
                                       "' is an empty file (0 bytes), not a database (reprise-server refuses it "
                                       "unless --init-empty-file)");
  }
  if (shape.regular && shape.readable && !shape.sqlite_header) return not_sqlite(path, shape);
  Result<std::unique_ptr<SqliteDb>> db = SqliteDb::open_read_only(path);
  if (!db) return db.status();
  DatabaseCheck out;
  Result<int> version = read_schema_version(**db);
  if (!version && version.status().code() == StatusCode::kDataLoss) {
    // The header or the schema page is damaged: say so, as a finding.
    out.integrity.problems.push_back(version.status().message());
    return out;
  }
  if (!version) return version.status();
  if (*version == 0) {
    return Status::failed_precondition("database '" + path +
                                       "' is an empty SQLite database (no tables), not a Reprise database");
  }
  out.schema_version = *version;
  Result<IntegrityReport> integrity = check_integrity(**db, full);
  if (!integrity) return integrity.status();
  out.integrity = std::move(*integrity);
  return out;
}

}  // namespace reprise::engine
