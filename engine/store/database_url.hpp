// What a database argument (reprise-server --db, the CLI's admin --db) names:
// a postgresql:// (or postgres://) URL is a PostgreSQL database, anything
// else a SQLite file's path.
#pragma once

#include <string>

namespace reprise::engine {

inline bool is_postgres_url(const std::string& db) {
  return db.rfind("postgresql://", 0) == 0 || db.rfind("postgres://", 0) == 0;
}

// The database argument as messages and logs show it: a URL's password
// replaced by "***"; a path as it is.
inline std::string redact_password(const std::string& db) {
  const size_t scheme = db.find("://");
  if (scheme == std::string::npos) return db;
  const size_t at = db.find('@', scheme + 3);
  const size_t slash = db.find('/', scheme + 3);
  if (at == std::string::npos || (slash != std::string::npos && slash < at)) return db;
  const size_t colon = db.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return db;
  return db.substr(0, colon + 1) + "***" + db.substr(at);
}

}  // namespace reprise::engine
