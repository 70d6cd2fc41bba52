#include "engine/store/key_database.hpp"

#include <filesystem>

#include "engine/store/api_keys.hpp"
#include "engine/store/database_url.hpp"
#include "engine/store/postgres/postgres_api_keys.hpp"
#include "engine/store/schema.hpp"
#include "engine/store/sqlite_store.hpp"

namespace reprise::engine {

namespace {

class SqliteKeyDatabase final : public KeyDatabase {
 public:
  explicit SqliteKeyDatabase(std::unique_ptr<SqliteDb> db) : db_(std::move(db)) {}

  Result<std::vector<ApiKeyRecord>> keys() override { return read_api_keys(*db_); }

  Status insert(const ApiKeyRecord& key) override {
    Result<Statement> s = db_->prepare(
        "INSERT INTO api_keys (name, sha256, namespaces, roles, created_at, revoked_at) "
        "VALUES (?1, ?2, ?3, ?4, ?5, NULL) ON CONFLICT (name) DO NOTHING");
    if (!s) return s.status();
    REPRISE_RETURN_IF_ERROR(s->bind(1, key.name)
                                .bind_blob(2, history::as_bytes(key.sha256))
                                .bind(3, join_key_names(key.namespaces))
                                .bind(4, join_key_names(key.roles))
                                .bind(5, to_unix_nanos(key.created_at))
                                .run());
    if (db_->changes() == 0) return Status::already_exists("an API key named '" + key.name + "' exists already");
    return Status::ok();
  }

  Status revoke(const std::string& name, TimePoint at) override {
    Result<Statement> s = db_->prepare("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?2) WHERE name = ?1");
    if (!s) return s.status();
    REPRISE_RETURN_IF_ERROR(s->bind(1, name).bind(2, to_unix_nanos(at)).run());
    if (db_->changes() == 0) return Status::not_found("no API key is named '" + name + "'");
    return Status::ok();
  }

 private:
  std::unique_ptr<SqliteDb> db_;
};

Result<std::unique_ptr<KeyDatabase>> open_sqlite_key_database(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    StoreOptions options;
    options.quick_check = false;
    Result<std::unique_ptr<SqliteStore>> created = SqliteStore::open(path, options);
    if (!created) return created.status();
  }  // closed: the file exists now
  // Not through SqliteStore, which a running server's store excludes: the
  // file as it is, checked and migrated as the store would.
  Result<std::unique_ptr<SqliteDb>> db = SqliteDb::open_as_is(path, false);
  if (!db) return db.status();
  Result<int> version = read_schema_version(**db);
  if (!version) return version.status();
  if (*version == 0) {
    return Status::failed_precondition("database '" + path +
                                       "' is empty: start reprise-server on it, or remove it to begin afresh");
  }
  REPRISE_RETURN_IF_ERROR(migrate(**db, schema_migrations()));
  REPRISE_RETURN_IF_ERROR((*db)->configure(Durability::kFull));
  return std::unique_ptr<KeyDatabase>(new SqliteKeyDatabase(std::move(*db)));
}

}  // namespace

Result<std::unique_ptr<KeyDatabase>> open_key_database(const std::string& db) {
  if (is_postgres_url(db)) return open_postgres_key_database(db);
  return open_sqlite_key_database(db);
}

}  // namespace reprise::engine
