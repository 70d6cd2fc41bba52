// Bad files and bad places: each gets a clear error that names the file and
// the problem, never a crash and never a half-written transition.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "child_process.hpp"
#include "crash_invariants.hpp"
#include "damage.hpp"
#include "engine/store/file_check.hpp"
#include "engine/store/schema.hpp"
#include "engine/store/sqlite_store.hpp"

namespace reprise::engine {
namespace {

using testing::TempDir;

void write_file(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

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
  EXPECT_EQ(store.status().message(), "database '" + path +
                                          "' is not a SQLite database (8192 bytes that do not start with SQLite's "
                                          "header). Refusing to open it: restore it from a backup, or use "
                                          "another file");
  EXPECT_TRUE(read_file(path) == std::string(8192, '\x5a'));
}

TEST(BadInput, SomeoneElsesSqliteFileIsRefusedUntouched) {
  TempDir dir;
  const std::string path = dir.file("other.db");
  {
    auto db = SqliteDb::open_as_is(path, true);  // a rollback-journal database, as most programs keep
    ASSERT_TRUE((*db)->exec("CREATE TABLE customers (id INTEGER)").is_ok());
  }
  const std::string before = read_file(path);
  auto store = SqliteStore::open(path);
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store.status().message(), "database '" + path + "' is not a Reprise database (application_id 0)");
  // Setting WAL mode would have rewritten its header.
  EXPECT_TRUE(read_file(path) == before);
}

TEST(BadInput, EmptyFileIsRefusedUnlessAllowed) {
  TempDir dir;
  const std::string path = dir.file("empty.db");
  write_file(path, "");
  auto store = SqliteStore::open(path);
  ASSERT_FALSE(store.is_ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(contains(store.status().message(), "database '" + path + "' is an existing empty file (0 bytes)"))
      << store.status().message();
  EXPECT_TRUE(contains(store.status().message(), "--init-empty-file")) << store.status().message();
  EXPECT_EQ(std::filesystem::file_size(path), 0u) << "nothing is written to a refused file";
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));

  auto allowed = SqliteStore::open(path, StoreOptions{.init_empty_file = true});
  ASSERT_TRUE(allowed.is_ok()) << allowed.status().to_string();
  EXPECT_TRUE((*allowed)->open_report().created);
  allowed->reset();
  // Now a Reprise database: opens without the flag, and is checked.
  auto again = SqliteStore::open(path);
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_TRUE((*again)->open_report().quick_checked);
}

TEST(BadInput, EmptySqliteDatabaseIsRefusedUnlessAllowed) {
  TempDir dir;
  const std::string path = dir.file("blank.db");
  { ASSERT_TRUE(SqliteDb::open(path, true, Durability::kFull).is_ok()); }  // WAL mode, no tables
  auto store = SqliteStore::open(path);
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(contains(store.status().message(), "is an existing empty SQLite database (no tables)"))
      << store.status().message();
  EXPECT_TRUE(SqliteStore::open(path, StoreOptions{.init_empty_file = true}).is_ok());
}

TEST(BadInput, EmptyFileBesideAWriteAheadLogIsRefusedEvenWhenAllowed) {
  TempDir dir;
  const std::string path = dir.file("lost.db");
  fill_store(path, 1);
  // A database whose pages are still in its WAL, then the file truncated.
  write_file(path + "-wal", std::string(4096, 'w'));
  write_file(path, "");
  auto store = SqliteStore::open(path, StoreOptions{.init_empty_file = true});
  EXPECT_EQ(store.status().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(contains(store.status().message(), "'" + path + "-wal' holds 4096 bytes")) << store.status().message();
  EXPECT_EQ(std::filesystem::file_size(path + "-wal"), 4096u) << "SQLite would have deleted it";
}

TEST(BadInput, ANewDatabaseIsCreatedWhole) {
  TempDir dir;
  const std::string path = dir.file("new.db");
  auto store = SqliteStore::open(path);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  EXPECT_TRUE((*store)->open_report().created);
  EXPECT_FALSE((*store)->open_report().quick_checked);
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(name == "new.db" || name == "new.db-wal" || name == "new.db-shm" || name == "new.db-lock")
        << name << " left behind";
  }
  // The header already says Reprise: the file was whole before it had its name.
  const std::string header = read_file(path).substr(0, 100);
  EXPECT_EQ(header.substr(68, 4), "RPRS");
}

TEST(BadInput, DamagedPageIsRefusedAtOpenByQuickCheck) {
  TempDir dir;
  const std::string path = dir.file("damaged.db");
  fill_store(path, 300);
  ASSERT_GT(testing::damage_table_page(path, "executions"), 1);
  auto store = SqliteStore::open(path);
  ASSERT_FALSE(store.is_ok());
  EXPECT_EQ(store.status().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(contains(store.status().message(), "database '" + path + "' is damaged: PRAGMA quick_check found "))
      << store.status().message();
  EXPECT_TRUE(contains(store.status().message(), "--skip-quick-check")) << store.status().message();

  // Skipping the check opens it; the full check finds the damage too.
  EXPECT_TRUE(SqliteStore::open(path, StoreOptions{.quick_check = false}).is_ok());
  auto checked = check_database_file(path, true);
  ASSERT_TRUE(checked.is_ok()) << checked.status().to_string();
  EXPECT_FALSE(checked->integrity.ok());
}

TEST(BadInput, SoundDatabasePassesBothChecks) {
  TempDir dir;
  const std::string path = dir.file("sound.db");
  fill_store(path, 50);
  auto store = SqliteStore::open(path);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  EXPECT_TRUE((*store)->open_report().quick_checked);
  EXPECT_GT((*store)->open_report().pages, 10);
  // The full check reads beside the open store.
  auto checked = check_database_file(path, true);
  ASSERT_TRUE(checked.is_ok()) << checked.status().to_string();
  EXPECT_TRUE(checked->integrity.ok()) << checked->integrity.problems.front();
  EXPECT_EQ(checked->schema_version, current_schema_version());
  EXPECT_EQ(check_database_file(dir.file("missing.db"), true).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(dir.file("missing.db")));
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
  auto store = SqliteStore::open(path);
  ASSERT_FALSE(store.is_ok());
  EXPECT_EQ(store.status().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(contains(store.status().message(), path)) << store.status().message();
}

TEST(BadInput, TruncatedFileWithoutTheCheckFailsReadsCleanly) {
  TempDir dir;
  const std::string path = dir.file("truncated2.db");
  fill_store(path, 300);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  auto store = SqliteStore::open(path, StoreOptions{.quick_check = false});
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
  auto store = SqliteStore::open(path, StoreOptions{.quick_check = true});
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
