// The api_keys table of a PostgreSQL store: read by PostgresStore for the
// server, written by `reprise admin key` (key_database.hpp).
//
// Thread safety: each function uses `db` alone.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/store/key_database.hpp"
#include "engine/store/postgres/pg_connection.hpp"

namespace reprise::engine {

// Every key, revoked ones included, by name.
Result<std::vector<ApiKeyRecord>> read_postgres_api_keys(PgConnection& db);

// The keys of the database at `url` (see open_key_database).
Result<std::unique_ptr<KeyDatabase>> open_postgres_key_database(const std::string& url);

}  // namespace reprise::engine
