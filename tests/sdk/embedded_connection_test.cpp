// Connection::embedded opens its file as reprise-server does (docs/sdk.md):
// a missing file is created and opens again; an existing empty, foreign or
// damaged one is refused with a reprise::Error that names the file and the
// problem, and is left as it was.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../store/damage.hpp"
#include "../store/store_test_util.hpp"
#include "engine/store/sqlite_db.hpp"
#include "engine/store/sqlite_store.hpp"
#include "reprise/client.hpp"
#include "reprise/errors.hpp"

namespace reprise {
namespace {

using engine::testing::TempDir;

// What Connection::embedded(path) threw ("" when it opened).
std::string embedded_open_error(const std::string& path) {
  try {
    Connection::embedded(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool embedded_error_says(const std::string& message, const std::string& part) {
  return message.find(part) != std::string::npos;
}

TEST(EmbeddedConnection, AMissingFileIsCreatedAndOpensAgain) {
  TempDir dir;
  const std::string path = dir.file("new.db");
  EXPECT_EQ(embedded_open_error(path), "");
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_EQ(embedded_open_error(path), "") << "the file it created is a Reprise database";
}

TEST(EmbeddedConnection, AnEmptyForeignOrDamagedFileIsRefusedWithAnErrorNamingIt) {
  TempDir dir;
  const std::string empty = dir.file("empty.db");
  std::ofstream(empty).close();
  const std::string garbage = dir.file("garbage.db");
  std::ofstream(garbage, std::ios::binary) << std::string(8192, 'Z');
  const std::string foreign = dir.file("customers.db");
  {
    auto db = engine::SqliteDb::open_as_is(foreign, true);
    ASSERT_TRUE(db.is_ok()) << db.status().to_string();
    ASSERT_TRUE((*db)->exec("CREATE TABLE customers (id INTEGER)").is_ok());
  }
  const std::string damaged = dir.file("damaged.db");
  {
    auto store = engine::SqliteStore::open(damaged);
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    engine::Transition t;
    for (int i = 0; i < 300; ++i) {
      engine::ExecutionWrite w = engine::testing::step(engine::testing::key("wf-" + std::to_string(i)), 1);
      w.state = std::string(2000, 's');
      t.executions.push_back(std::move(w));
    }
    ASSERT_TRUE((*store)->commit(std::move(t)).is_ok());
  }
  ASSERT_GT(engine::testing::damage_table_page(damaged, "executions"), 1);

  const std::string empty_error = embedded_open_error(empty);
  EXPECT_TRUE(embedded_error_says(empty_error, "database '" + empty + "' is an existing empty file (0 bytes)"))
      << empty_error;
  EXPECT_EQ(std::filesystem::file_size(empty), 0u) << "nothing is written to a refused file";
  const std::string garbage_error = embedded_open_error(garbage);
  EXPECT_TRUE(embedded_error_says(garbage_error, "database '" + garbage + "' is not a SQLite database"))
      << garbage_error;
  const std::string foreign_error = embedded_open_error(foreign);
  EXPECT_TRUE(embedded_error_says(foreign_error, "database '" + foreign + "' is not a Reprise database"))
      << foreign_error;
  const std::string damaged_error = embedded_open_error(damaged);
  EXPECT_TRUE(embedded_error_says(damaged_error, "database '" + damaged + "' is damaged: PRAGMA quick_check found "))
      << damaged_error;
}

}  // namespace
}  // namespace reprise
