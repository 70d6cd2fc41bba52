// The store's SQLite schema and its versioning.
//
// A Reprise database is recognised by PRAGMA application_id and records its
// schema version in the `reprise_meta` table. Opening applies, in one
// transaction, every migration above the recorded version; a database written
// by a newer Reprise (a version this build does not know) is refused rather
// than guessed at.
#pragma once

#include <span>

#include "engine/store/sqlite_db.hpp"

namespace reprise::engine {

struct Migration {
  int version;      // the schema version after this step
  const char* sql;  // one or more statements
};

// The migrations of this build, oldest first; the last one's version is the
// current schema version.
std::span<const Migration> schema_migrations();
int current_schema_version();

// Creates or upgrades the schema of `db` with `migrations`; FAILED_PRECONDITION
// if the file is not a Reprise database or is newer than `migrations` knows.
Status migrate(SqliteDb& db, std::span<const Migration> migrations);

// The version recorded in the file, 0 for an empty database.
Result<int> read_schema_version(SqliteDb& db);

}  // namespace reprise::engine
