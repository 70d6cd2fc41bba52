// The PostgreSQL store's schema and its versioning.
//
// A Reprise database records its schema version, and the shard count chosen
// when it was created, in `reprise_meta`. Opening applies, in one
// transaction, every migration above the recorded version; the version row
// is locked (SELECT ... FOR UPDATE) while it does, so servers opening one
// database at once migrate it once. A database holding tables but no
// reprise_meta (someone else's), or a newer schema, is refused.
#pragma once

#include <span>

#include "engine/store/postgres/pg_connection.hpp"

namespace reprise::engine {

struct PgMigration {
  int version;      // the schema version after this step
  const char* sql;  // one or more statements
};

// The migrations of this build, oldest first.
std::span<const PgMigration> postgres_migrations();

struct PgSchema {
  int version = 0;
  int shard_count = 0;   // fixed at creation
  bool created = false;  // this open made the schema
};

// Creates or upgrades the schema; a new database gets `shard_count` shards.
Result<PgSchema> migrate_postgres(PgConnection& db, std::span<const PgMigration> migrations, int shard_count);

}  // namespace reprise::engine
