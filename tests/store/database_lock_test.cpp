// DatabaseLock through SqliteStore::open: a file one store has open is
// refused to a second (in this process as in another), before the second
// reads or writes it, and is free again once the first is destroyed.
#include "engine/store/database_lock.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "engine/store/sqlite_store.hpp"
#include "store_test_util.hpp"

namespace reprise::engine {
namespace {

using testing::TempDir;

TEST(DatabaseLock, ASecondStoreOnAnOpenFileIsRefusedByName) {
  TempDir dir;
  const std::string path = dir.file("one.db");
  auto first = SqliteStore::open(path);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();

  auto second = SqliteStore::open(path);
  ASSERT_FALSE(second.is_ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("'" + path + "' is in use by another"), std::string::npos)
      << second.status().to_string();

  first.value().reset();
  auto again = SqliteStore::open(path);
  EXPECT_TRUE(again.is_ok()) << again.status().to_string();
}

TEST(DatabaseLock, AMissingFileIsLockedBeforeItIsCreated) {
  TempDir dir;
  const std::string path = dir.file("new.db");
  Result<DatabaseLock> held = DatabaseLock::acquire(path);
  ASSERT_TRUE(held.is_ok()) << held.status().to_string();
  auto store = SqliteStore::open(path);
  EXPECT_FALSE(store.is_ok());
  EXPECT_FALSE(std::filesystem::exists(path)) << "a refused open creates nothing";
}

TEST(DatabaseLock, TheLockCanBeLeftOffForAStoreThatIsAbandonedAndReopened) {
  TempDir dir;
  const std::string path = dir.file("sim.db");
  StoreOptions options;
  options.lock_file = false;
  auto first = SqliteStore::open(path, options);
  ASSERT_TRUE(first.is_ok());
  auto second = SqliteStore::open(path, options);
  EXPECT_TRUE(second.is_ok()) << second.status().to_string();
}

}  // namespace
}  // namespace reprise::engine
