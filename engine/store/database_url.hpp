// What a database argument (reprise-server --db, the CLI's admin --db) names:
// a postgresql:// (or postgres://) URL is a PostgreSQL database, anything
// else a SQLite file's path.
#pragma once

#include <string>

namespace reprise::engine {

inline bool is_postgres_url(const std::string& db) {
  return db.rfind("postgresql://", 0) == 0 || db.rfind("postgres://", 0) == 0;
}

}  // namespace reprise::engine
