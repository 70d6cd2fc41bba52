#include "engine/store/schema.hpp"

#include <gtest/gtest.h>

#include "engine/store/sqlite_store.hpp"
#include "store_test_util.hpp"

namespace reprise::engine {
namespace {

using testing::TempDir;

std::unique_ptr<SqliteDb> raw_open(const std::string& path) {
  auto db = SqliteDb::open(path, true, Durability::kFull);
  EXPECT_TRUE(db.is_ok()) << db.status().to_string();
  return std::move(*db);
}

TEST(Schema, NewDatabaseGetsTheCurrentVersion) {
  TempDir dir;
  const std::string path = dir.file("new.db");
  ASSERT_TRUE(SqliteStore::open(path).is_ok());
  auto db = raw_open(path);
  EXPECT_EQ(*read_schema_version(*db), current_schema_version());
  // Opening again is a no-op migration.
  ASSERT_TRUE(migrate(*db, schema_migrations()).is_ok());
  EXPECT_EQ(*read_schema_version(*db), current_schema_version());
}

TEST(Schema, OlderSchemaIsMigratedInPlaceKeepingData) {
  TempDir dir;
  const std::string path = dir.file("old.db");
  const Migration v1[] = {
      {1,
       "CREATE TABLE reprise_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
       "CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT);"},
  };
  const Migration v2[] = {
      v1[0],
      {2, "ALTER TABLE things ADD COLUMN color TEXT NOT NULL DEFAULT 'red';"},
  };
  auto db = raw_open(path);
  ASSERT_TRUE(migrate(*db, v1).is_ok());
  ASSERT_TRUE(db->exec("INSERT INTO things (name) VALUES ('kept')").is_ok());
  EXPECT_EQ(*read_schema_version(*db), 1);

  ASSERT_TRUE(migrate(*db, v2).is_ok());
  EXPECT_EQ(*read_schema_version(*db), 2);
  auto s = db->prepare("SELECT name, color FROM things");
  ASSERT_TRUE(s.is_ok());
  ASSERT_TRUE(*s->step());
  EXPECT_EQ(s->column_text(0), "kept");
  EXPECT_EQ(s->column_text(1), "red");
}

// A database from before namespaces (schema version 2) keeps its data in the
// 'default' namespace, which the migration registers, blobs included.
TEST(Schema, ADatabaseFromBeforeNamespacesKeepsItsDataInDefault) {
  TempDir dir;
  const std::string path = dir.file("v2.db");
  {
    auto db = raw_open(path);
    ASSERT_TRUE(migrate(*db, schema_migrations().first(2)).is_ok());
    const std::string blob =
        "INSERT INTO blobs (sha256, size, complete, touched_at) VALUES (x'" + std::string(64, 'a') + "', 0, 1, 0)";
    ASSERT_TRUE(db->exec(blob.c_str()).is_ok());
  }
  auto store = SqliteStore::open(path);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  auto namespaces = (*store)->list_namespaces();
  ASSERT_TRUE(namespaces.is_ok());
  ASSERT_EQ(namespaces->size(), 1u);
  EXPECT_EQ(namespaces->front().name, "default");
  EXPECT_FALSE(namespaces->front().retention.has_value());
  history::Sha256Digest digest{};
  digest.fill(0xaa);
  EXPECT_TRUE((*store)->blobs().stat(digest, "default").is_ok());
  EXPECT_EQ((*store)->blobs().stat(digest, "other").status().code(), StatusCode::kNotFound);
}

TEST(Schema, FailedMigrationLeavesTheOldVersion) {
  TempDir dir;
  const std::string path = dir.file("half.db");
  const Migration v1[] = {{1, "CREATE TABLE reprise_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"}};
  const Migration broken[] = {v1[0], {2, "CREATE TABLE ok_table (x); THIS IS NOT SQL;"}};
  auto db = raw_open(path);
  ASSERT_TRUE(migrate(*db, v1).is_ok());
  Status s = migrate(*db, broken);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("migrating to schema version 2"), std::string::npos) << s.message();
  EXPECT_EQ(*read_schema_version(*db), 1);
  auto t = db->prepare("SELECT count(*) FROM sqlite_schema WHERE name = 'ok_table'");
  ASSERT_TRUE(*t->step());
  EXPECT_EQ(t->column_int(0), 0) << "the half-applied step was rolled back";
}

}  // namespace
}  // namespace reprise::engine
