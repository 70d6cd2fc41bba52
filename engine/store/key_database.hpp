// KeyDatabase: the API keys of a server's database, as `reprise admin key`
// makes, lists and revokes them. It works on the database itself, beside a
// running server (which reads the keys every second), so the first key needs
// no key and a secret never crosses the network. The database is a SQLite
// file or a PostgreSQL database, as database_url.hpp tells them apart.
//
// Thread safety: one thread at a time. Lifetime: the connection is closed
// when the KeyDatabase is destroyed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/store/records.hpp"
#include "history/status.hpp"

namespace reprise::engine {

class KeyDatabase {
 public:
  virtual ~KeyDatabase() = default;

  // Every key, revoked ones included, by name.
  virtual Result<std::vector<ApiKeyRecord>> keys() = 0;
  // ALREADY_EXISTS when a key (revoked or not) has that name.
  virtual Status insert(const ApiKeyRecord& key) = 0;
  // NOT_FOUND when no key has that name; a key revoked already keeps its
  // first revocation time.
  virtual Status revoke(const std::string& name, TimePoint at) = 0;
};

// `db`: a SQLite file's path, created if missing; or a postgresql:// URL of
// a database a server has created (an empty one is refused, naming how to
// create it: its shard count is chosen then). Migrated to this build's
// schema if older; refused, naming the database, when it is not a Reprise
// database or is newer. Safe while a server runs on it: the key writes are
// short transactions beside the server's.
Result<std::unique_ptr<KeyDatabase>> open_key_database(const std::string& db);

}  // namespace reprise::engine
