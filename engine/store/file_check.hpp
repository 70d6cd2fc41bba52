// Guards for the database file: what an existing file is before the store
// writes anything to it, PRAGMA quick_check when the store opens it, and the
// full check behind `reprise admin check`.
//
// SQLite takes a 0-byte file for a new, empty database (and deletes a `-wal`
// file beside it), and finds damage inside the file only when a read reaches
// the damaged page. The store refuses both at open instead (docs/storage.md,
// "Bad files and full disks").
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/store/sqlite_db.hpp"

namespace reprise::engine {

// Refuses, before SQLite reads or writes it, an existing file that cannot be
// a database: an empty (0-byte) one unless `allow_empty` (never when a
// non-empty `-wal` file lies beside it, which SQLite would delete), or one
// without SQLite's header. A missing file passes: the caller creates it.
Status check_file_before_open(const std::string& path, bool allow_empty);

struct IntegrityReport {
  std::vector<std::string> problems;  // what SQLite reported; empty when the check passed
  int64_t pages = 0;                  // the file's size in pages
  std::chrono::nanoseconds elapsed{0};
  bool ok() const { return problems.empty(); }
};

// `full` false: PRAGMA quick_check — every page's b-tree structure, records
// and constraints, reading the whole file once, but not whether the indexes
// match their tables. `full` true: PRAGMA integrity_check (that too) and
// PRAGMA foreign_key_check. At most `max_problems` problems are kept. A page
// too damaged for the check to run at all is reported as a problem, not as an
// error; the error is for a check that could not run (a locked file).
Result<IntegrityReport> check_integrity(SqliteDb& db, bool full, int max_problems = 20);

struct DatabaseCheck {
  int schema_version = 0;
  IntegrityReport integrity;
};

// `reprise admin check`: opens `path` read-only (never creating or writing
// it, so it can run beside a server using the file), requires a Reprise
// database, and runs check_integrity(full). A Status when the file cannot be
// checked at all: missing, empty, not SQLite, not a Reprise database.
Result<DatabaseCheck> check_database_file(const std::string& path, bool full);

}  // namespace reprise::engine
