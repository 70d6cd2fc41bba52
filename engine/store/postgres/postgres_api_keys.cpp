#include "engine/store/postgres/postgres_api_keys.hpp"

#include "engine/store/api_keys.hpp"
#include "engine/store/postgres/postgres_schema.hpp"

namespace reprise::engine {

Result<std::vector<ApiKeyRecord>> read_postgres_api_keys(PgConnection& db) {
  Result<PgResult> r =
      db.query("SELECT name, sha256, namespaces, roles, created_at, revoked_at FROM api_keys ORDER BY name");
  if (!r) return r.status();
  std::vector<ApiKeyRecord> out;
  for (int i = 0; i < r->rows(); ++i) {
    ApiKeyRecord key;
    key.name = r->get_bytes(i, 0);
    if (!history::digest_from_bytes(r->get_bytes(i, 1), key.sha256)) {
      return Status::data_loss("database '" + db.name() + "': API key '" + key.name + "' has a damaged hash");
    }
    key.namespaces = split_key_names(r->get_bytes(i, 2));
    key.roles = split_key_names(r->get_bytes(i, 3));
    key.created_at = from_unix_nanos(r->get_int(i, 4));
    if (!r->is_null(i, 5)) key.revoked_at = from_unix_nanos(r->get_int(i, 5));
    out.push_back(std::move(key));
  }
  return out;
}

namespace {

class PostgresKeyDatabase final : public KeyDatabase {
 public:
  explicit PostgresKeyDatabase(std::unique_ptr<PgConnection> db) : db_(std::move(db)) {}

  Result<std::vector<ApiKeyRecord>> keys() override { return read_postgres_api_keys(*db_); }

  Status insert(const ApiKeyRecord& key) override {
    Result<PgResult> r = db_->query(
        "INSERT INTO api_keys (name, sha256, namespaces, roles, created_at, revoked_at) "
        "VALUES ($1, $2, $3, $4, $5, NULL) ON CONFLICT (name) DO NOTHING",
        PgParams()
            .add_text(key.name)
            .add_bytes(history::as_bytes(key.sha256))
            .add_text(join_key_names(key.namespaces))
            .add_text(join_key_names(key.roles))
            .add(to_unix_nanos(key.created_at)));
    if (!r) return r.status();
    if (r->affected() == 0) return Status::already_exists("an API key named '" + key.name + "' exists already");
    return Status::ok();
  }

  Status revoke(const std::string& name, TimePoint at) override {
    Result<PgResult> r = db_->query("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE name = $1",
                                    PgParams().add_text(name).add(to_unix_nanos(at)));
    if (!r) return r.status();
    if (r->affected() == 0) return Status::not_found("no API key is named '" + name + "'");
    return Status::ok();
  }

 private:
  std::unique_ptr<PgConnection> db_;
};

// The shard count a server recorded when it created the database; 0 when no
// server has (no reprise_meta, or one a creating server has not finished).
Result<int> recorded_shard_count(PgConnection& db) {
  Result<PgResult> meta = db.query(
      "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = "
      "'reprise_meta'");
  if (!meta) return meta.status();
  if (meta->get_int(0, 0) == 0) return 0;
  Result<PgResult> shards = db.query("SELECT value FROM reprise_meta WHERE key = 'shard_count'");
  if (!shards) return shards.status();
  if (shards->rows() == 0) return 0;
  try {
    return std::stoi(shards->get_bytes(0, 0));
  } catch (const std::exception&) {
    return Status::data_loss("database '" + db.name() + "' records a bad shard_count");
  }
}

}  // namespace

Result<std::unique_ptr<KeyDatabase>> open_postgres_key_database(const std::string& url) {
  Result<std::unique_ptr<PgConnection>> db = PgConnection::connect(url);
  if (!db) return db.status();
  Result<int> shard_count = recorded_shard_count(**db);
  if (!shard_count) return shard_count.status();
  // The shard count is chosen when a server creates the database, and
  // cannot change after: a key command does not choose it for the server.
  if (*shard_count == 0) {
    return Status::failed_precondition("database '" + (*db)->name() +
                                       "' has no Reprise schema yet: start reprise-server --db on it once (it creates "
                                       "the schema with its --shards), then make keys");
  }
  Result<PgSchema> schema = migrate_postgres(**db, postgres_migrations(), *shard_count);
  if (!schema) return schema.status();
  return std::unique_ptr<KeyDatabase>(new PostgresKeyDatabase(std::move(*db)));
}

}  // namespace reprise::engine
