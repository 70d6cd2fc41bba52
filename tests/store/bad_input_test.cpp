// Bad files and bad places: each gets a clear error that names the file and
// the problem, never a crash and never a half-written transition.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "child_process.hpp"
#include "crash_invariants.hpp"
#include "engine/store/schema.hpp"

namespace reprise::engine {
namespace {

using testing::TempDir;

void write_file(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A store with some history in it, closed cleanly (WAL checkpointed).
void fill_store(const std::string& path, int executions) {
  auto store = SqliteStore::open(path);
  ASSERT_TRUE(store.is_ok());
  for (int i = 0; i < executions; ++i) {
    Transition t;
    ExecutionWrite w = testing::step(testing::key("wf-" + std::to_string(i)), 1);
    w.state = std::string(2000, 's');
    t.executions.push_back(std::move(w));
    ASSERT_TRUE((*store)->commit(std::move(t)).is_ok());
  }
}

TEST(BadInput, GarbageFileIsNotADatabase) {
  TempDir dir;
  const std::string path = dir.file("garbage.db");
  write_file(path, std::string(8192, '\x5a'));
  auto store = SqliteStore::open(path);
  ASSERT_FALSE(store.is_ok());
  EXPECT_EQ(store.status().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(contains(store.status().message(), "database '" + path + "'")) << store.status().message();
  EXPECT_TRUE(contains(store.status().message(), "file is not a database")) << store.status().message();
}

TEST(BadInput, SomeoneElsesSqliteFileIsRefused) {
  TempDir dir;
  const std::string path = dir.file("other.db");
  {
    auto db = SqliteDb::open(path, true, Durability::kFull);
    ASSERT_TRUE((*db)->exec("CREATE TABLE customers (id INTEGER)").is_ok());
  }
  auto store = SqliteStore::open(path);
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store.status().message(), "database '" + path + "' is not a Reprise database (application_id 0)");
}

TEST(BadInput, NewerSchemaIsRefusedNotGuessedAt) {
  TempDir dir;
  const std::string path = dir.file("newer.db");
  fill_store(path, 1);
  {
    auto db = SqliteDb::open(path, false, Durability::kFull);
    ASSERT_TRUE((*db)->exec("UPDATE reprise_meta SET value = '999' WHERE key = 'schema_version'").is_ok());
  }
  auto store = SqliteStore::open(path);
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store.status().message(), "database '" + path + "' has schema version 999, newer than the version " +
                                          std::to_string(current_schema_version()) +
                                          " this build of Reprise supports; upgrade Reprise");
}

TEST(BadInput, UnreadableSchemaVersion) {
  TempDir dir;
  const std::string path = dir.file("mangled.db");
  fill_store(path, 1);
  {
    auto db = SqliteDb::open(path, false, Durability::kFull);
    ASSERT_TRUE((*db)->exec("UPDATE reprise_meta SET value = 'seven' WHERE key = 'schema_version'").is_ok());
  }
  auto store = SqliteStore::open(path);
  EXPECT_EQ(store.status().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(contains(store.status().message(), "unreadable schema version 'seven'"));
}

TEST(BadInput, MissingDirectoryAndDirectoryPath) {
  TempDir dir;
  const std::string missing = dir.file("no/such/dir/reprise.db");
  auto a = SqliteStore::open(missing);
  EXPECT_EQ(a.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(a.status().message(),
            "cannot create database '" + missing + "': directory '" + dir.file("no/such/dir") + "' does not exist");
  auto b = SqliteStore::open(dir.path().string());
  EXPECT_EQ(b.status().message(), "database path '" + dir.path().string() + "' is a directory");
  EXPECT_EQ(SqliteStore::open("").status().code(), StatusCode::kInvalidArgument);
}

TEST(BadInput, TruncatedFileIsCaughtByTheIntegrityCheck) {
  TempDir dir;
  const std::string path = dir.file("truncated.db");
  fill_store(path, 300);
  const auto size = std::filesystem::file_size(path);
  ASSERT_GT(size, 200'000u);
  std::filesystem::resize_file(path, size / 2);
  auto store = SqliteStore::open(path, StoreOptions{.integrity_check = true});
  ASSERT_FALSE(store.is_ok());
  EXPECT_EQ(store.status().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(contains(store.status().message(), path)) << store.status().message();
}

TEST(BadInput, TruncatedFileWithoutTheCheckFailsReadsCleanly) {
  TempDir dir;
  const std::string path = dir.file("truncated2.db");
  fill_store(path, 300);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  auto store = SqliteStore::open(path);
  if (!store.is_ok()) {
    EXPECT_EQ(store.status().code(), StatusCode::kDataLoss) << store.status().to_string();
    return;
  }
  // Reading the lost half answers DATA_LOSS, never garbage.
  Status first_error;
  for (int i = 0; i < 300 && first_error.is_ok(); ++i) {
    auto rec = (*store)->get_execution(testing::key("wf-" + std::to_string(i)));
    if (!rec.is_ok()) first_error = rec.status();
  }
  EXPECT_EQ(first_error.code(), StatusCode::kDataLoss) << first_error.to_string();
  EXPECT_TRUE(contains(first_error.message(), path));
}

// Mounts a small tmpfs at `dir`; false where this process may not mount.
bool mount_tmpfs(const std::string& dir, const char* size) {
  std::filesystem::create_directory(dir);
  return std::system(("mount -t tmpfs -o size=" + std::string(size) + " tmpfs " + dir + " 2>/dev/null").c_str()) == 0;
}

TEST(BadInput, ReadOnlyFileSystemIsRefusedAtOpen) {
  TempDir dir;
  const std::string disk = dir.file("ro");
  if (!mount_tmpfs(disk, "4m")) GTEST_SKIP() << "cannot mount a small tmpfs here (needs root)";
  const std::string path = disk + "/store.db";
  fill_store(path, 2);
  ASSERT_EQ(std::system(("mount -o remount,ro " + disk).c_str()), 0);
  auto store = SqliteStore::open(path);
  EXPECT_EQ(store.status().code(), StatusCode::kPermissionDenied) << store.status().to_string();
  EXPECT_EQ(store.status().message(), "database '" + path +
                                          "' can only be opened read-only (a read-only file, directory or file "
                                          "system); the store needs to write to it");
  EXPECT_EQ(std::system(("umount " + disk).c_str()), 0);
}

// Runs the filling writer on `path` and returns its first error line, after
// checking it neither crashed nor failed to commit anything.
std::string fill_until_error(const std::string& path, uint64_t max_file_bytes, std::map<std::string, int64_t>& acked) {
  testing::ChildProcess child({testing::store_child_path(), "fill", path, std::to_string(max_file_bytes)});
  std::string line, error;
  while (child.read_line(line)) {
    testing::record_ack(line, acked);
    if (line.rfind("error", 0) == 0 && error.empty()) error = line;
  }
  const int status = child.wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the writer must not crash";
  EXPECT_FALSE(acked.empty()) << "some commits fit before the limit";
  return error;
}

void expect_acknowledged_steps_intact(const std::string& path, const std::map<std::string, int64_t>& acked) {
  auto store = SqliteStore::open(path, StoreOptions{.integrity_check = true});
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  testing::expect_whole_steps(**store, 8, acked);
}

TEST(BadInput, FileSizeLimitFailsCommitsCleanlyAndKeepsWhatWasAcknowledged) {
  ASSERT_FALSE(testing::store_child_path().empty()) << "REPRISE_STORE_CHILD is not set";
  TempDir dir;
  const std::string path = dir.file("full.db");
  std::map<std::string, int64_t> acked;
  const std::string error = fill_until_error(path, 3 << 20, acked);
  EXPECT_EQ(error.rfind("error RESOURCE_EXHAUSTED database '" + path + "'", 0), 0u) << error;
  EXPECT_TRUE(contains(error, "the file size limit (ulimit -f) of 3145728 bytes was reached")) << error;
  expect_acknowledged_steps_intact(path, acked);
}

TEST(BadInput, FullDiskFailsCommitsCleanlyAndKeepsWhatWasAcknowledged) {
  ASSERT_FALSE(testing::store_child_path().empty()) << "REPRISE_STORE_CHILD is not set";
  TempDir dir;
  const std::string disk = dir.file("disk");
  if (!mount_tmpfs(disk, "3m")) GTEST_SKIP() << "cannot mount a small tmpfs here (needs root)";
  const std::string path = disk + "/full.db";
  std::map<std::string, int64_t> acked;
  const std::string error = fill_until_error(path, 0, acked);
  EXPECT_EQ(error.rfind("error RESOURCE_EXHAUSTED database '" + path + "'", 0), 0u) << error;
  EXPECT_TRUE(contains(error, "the disk holding it is full")) << error;

  // Check a copy on a disk with room, then let the small one go.
  const std::string copy = dir.file("copy.db");
  for (const char* suffix : {"", "-wal"}) {
    std::error_code ec;
    std::filesystem::copy_file(path + suffix, copy + suffix, ec);
  }
  EXPECT_EQ(std::system(("umount " + disk).c_str()), 0);
  expect_acknowledged_steps_intact(copy, acked);
}

}  // namespace
}  // namespace reprise::engine
