// `reprise admin backup`: a consistent copy of a database a server may be
// using, through SQLite's online backup API.
//
// Thread safety: a free function; it opens connections of its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "history/status.hpp"

namespace reprise::engine {

struct BackupReport {
  int schema_version = 0;
  int64_t pages = 0;
  int64_t bytes = 0;
  std::chrono::nanoseconds elapsed{0};
};

// Copies the Reprise database at `source` to `target`, page by page in one
// read transaction: the copy is the database as of one commit, holding every
// transition acknowledged before the backup began, while a server on
// `source` goes on writing (WAL readers do not block the writer; only its
// checkpoints wait for the copy to finish). The copy is written beside
// `target`, passes PRAGMA quick_check, is fsynced and only then renamed into
// place, so `target` is never half a copy. An existing `target` is refused
// unless `overwrite`. Restoring is starting a server on the copy.
Result<BackupReport> backup_database(const std::string& source, const std::string& target, bool overwrite);

}  // namespace reprise::engine
