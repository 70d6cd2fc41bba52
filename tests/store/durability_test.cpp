// Durability: the pragmas each level sets, read back from every connection
// the store keeps, and power losses simulated at random moments of a stream
// of commits (PowerLossVfs): the synced file must hold every acknowledged
// transition and no part of any other. The SIGKILL tests in crash_test.cpp
// cannot show this: a killed process leaves its writes in the page cache.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "crash_invariants.hpp"
#include "engine/store/sqlite_store.hpp"
#include "power_loss_vfs.hpp"
#include "tests/test_seed.hpp"

namespace reprise::engine {
namespace {

using testing::PowerLossVfs;
using testing::TempDir;

constexpr int kPowerCutExecutions = 8;
constexpr int kPowerCutWriters = 4;

TEST(Durability, EachLevelSetsItsPragmasOnEveryConnection) {
  for (const auto& [durability, synchronous] : {std::pair{Durability::kFull, 2}, std::pair{Durability::kNormal, 1}}) {
    SCOPED_TRACE("synchronous=" + std::to_string(synchronous));
    TempDir dir;
    for (int open = 0; open < 2; ++open) {  // a new file, then an existing one
      auto store = SqliteStore::open(dir.file("pragmas.db"), {.durability = durability, .read_connections = 3});
      ASSERT_TRUE(store.is_ok()) << store.status().to_string();
      const std::vector<ConnectionSettings>& connections = (*store)->open_report().connections;
      ASSERT_EQ(connections.size(), 4u) << "the writer and three readers";
      for (const ConnectionSettings& c : connections) {
        EXPECT_EQ(c.synchronous, synchronous);
        EXPECT_EQ(c.journal_mode, "wal");
      }
    }
  }
}

// Commits the next steps of every execution, from where the file left each,
// on kPowerCutWriters threads until a commit fails (the power cut), and adds what
// was acknowledged to `acked`.
void write_until_power_cut(SqliteStore& store, std::map<std::string, int64_t>& acked) {
  std::vector<int64_t> version(kPowerCutExecutions, 0), task(kPowerCutExecutions, 0);
  for (int e = 0; e < kPowerCutExecutions; ++e) {
    Result<ExecutionRecord> rec = store.get_execution(testing::key("e-" + std::to_string(e)));
    if (rec.is_ok()) version[e] = rec->version;
  }
  auto tasks = store.load_tasks(0, 1'000'000);
  ASSERT_TRUE(tasks.is_ok());
  for (const TaskRecord& t : *tasks) task[std::stoi(t.execution.workflow_id.substr(2))] = t.task_id;

  std::mutex mu;
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kPowerCutWriters; ++t) {
    threads.emplace_back([&, t] {
      while (!failed) {
        for (int e = t; e < kPowerCutExecutions && !failed; e += kPowerCutWriters) {
          const ExecutionKey k = testing::key("e-" + std::to_string(e));
          Result<CommitResult> r = store.commit(testing::whole_step(k, version[e] + 1, task[e]));
          if (!r) {
            failed = true;
            EXPECT_TRUE(PowerLossVfs::instance().power_is_cut()) << "failed with power on: " << r.status().to_string();
            return;
          }
          ++version[e];
          task[e] = r->task_ids[0];
          std::lock_guard lock(mu);
          acked[k.workflow_id] = version[e];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
}

TEST(Durability, APowerLossAtAnyMomentKeepsEveryAcknowledgedTransitionWhole) {
  PowerLossVfs& vfs = PowerLossVfs::instance();
  const uint64_t seed = test_seed("REPRISE_POWER_LOSS_SEED");
  SCOPED_TRACE("seed " + std::to_string(seed) + " (REPRISE_POWER_LOSS_SEED replays it)");
  std::mt19937_64 rng(seed);
  // About a hundred commits' writes and syncs: cuts land in commits, in
  // checkpoints and between them.
  std::uniform_int_distribution<int64_t> cut_after(1, 1500);
  int64_t total_acked = 0;
  for (int round = 0; round < 6; ++round) {
    TempDir dir;
    const std::string db = dir.file("power.db");
    std::map<std::string, int64_t> acked;
    for (int loss = 0; loss < 3; ++loss) {  // the same file through several power losses
      const int64_t cut = cut_after(rng);
      SCOPED_TRACE("round " + std::to_string(round) + ", loss " + std::to_string(loss) + ", power cut at I/O call " +
                   std::to_string(cut));
      {
        auto store = SqliteStore::open(db, {.vfs = PowerLossVfs::kName});
        ASSERT_TRUE(store.is_ok()) << store.status().to_string();
        vfs.cut_power_after(cut);
        write_until_power_cut(**store, acked);
      }  // closed with the power off: its last checkpoint goes nowhere
      vfs.restore_power();
      // Only what was synced is on disk; read it without the VFS.
      auto store = SqliteStore::open(db, {.quick_check = true});
      ASSERT_TRUE(store.is_ok()) << store.status().to_string();
      testing::expect_whole_steps(**store, kPowerCutExecutions, acked);
      if (HasFailure()) return;
    }
    for (const auto& [id, step] : acked) total_acked += step;
  }
  EXPECT_GT(total_acked, 0) << "no commit was acknowledged before a power cut";
}

// The simulated disk itself: a sync puts the whole unsynced range on disk,
// however long. The unix VFS underneath writes at most 128 KiB a call and
// takes a longer write for a full disk: a sync of exactly 128 KiB wrote
// nothing and failed SQLITE_FULL, a checkpoint's sync now and then.
TEST(PowerLossVfsSync, PutsAnUnsyncedRangeOfAnyLengthOnDisk) {
  PowerLossVfs::instance();
  sqlite3_vfs* vfs = sqlite3_vfs_find(PowerLossVfs::kName);
  ASSERT_NE(vfs, nullptr);
  TempDir dir;
  for (const int length : {4096, 128 << 10, 160 << 10, 512 << 10}) {
    SCOPED_TRACE(std::to_string(length) + " bytes");
    const std::string path = dir.file("range-" + std::to_string(length));
    std::vector<char> memory(vfs->szOsFile);
    auto* file = reinterpret_cast<sqlite3_file*>(memory.data());
    const int open_flags = SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_CREATE | SQLITE_OPEN_READWRITE;
    ASSERT_EQ(vfs->xOpen(vfs, path.c_str(), file, open_flags, nullptr), SQLITE_OK);
    const std::string bytes(length, 'x');
    EXPECT_EQ(file->pMethods->xWrite(file, bytes.data(), length, 0), SQLITE_OK);
    EXPECT_EQ(file->pMethods->xSync(file, SQLITE_SYNC_NORMAL), SQLITE_OK);
    file->pMethods->xClose(file);
    EXPECT_EQ(std::filesystem::file_size(path), static_cast<uintmax_t>(length)) << "what the sync put on disk";
  }
}

// The writer copies, between two batches, what the checkpointer could not
// (a reader held it back). When that copy meets a full disk, the next batch,
// committed once there is room, must not take the full disk for its own:
// it was written again, and each of its transitions, committed, was refused
// as conflicting with itself (ALREADY_EXISTS, ABORTED).
TEST(Durability, ACheckpointBetweenBatchesThatMeetsAFullDiskFailsNoLaterCommit) {
  PowerLossVfs& vfs = PowerLossVfs::instance();
  TempDir dir;
  const std::string path = dir.file("full.db");
  sqlite3* reader = nullptr;
  std::atomic<bool> fill_the_disk{false};
  std::unique_ptr<SqliteStore> store;
  // On every way out, a failed ASSERT midway too, the tests after this one
  // in the binary get the disk back with room and power.
  struct GiveTheDiskBack {
    PowerLossVfs& vfs;
    std::unique_ptr<SqliteStore>& store;
    sqlite3*& reader;
    ~GiveTheDiskBack() {
      vfs.set_disk_full(false);
      store.reset();
      if (reader != nullptr) sqlite3_close(reader);
      vfs.restore_power();
    }
  } give_the_disk_back{vfs, store, reader};
  StoreOptions options;
  options.vfs = PowerLossVfs::kName;
  // Due first once the big commit below is in the WAL.
  options.checkpoints.passive_after_pages = 200;
  options.fault_hook = [&](FaultPoint p) {
    if (p != FaultPoint::kAfterCommit || !fill_the_disk.exchange(false)) return Status::ok();
    // The checkpointer copied what came before the reader's snapshot and
    // left the rest to the writer; the reader lets go, and the disk fills.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (store->storage_stats().checkpoints.passive == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(sqlite3_exec(reader, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
    vfs.set_disk_full(true);
    return Status::ok();
  };
  auto opened = SqliteStore::open(path, std::move(options));
  ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
  store = std::move(*opened);
  ASSERT_TRUE(store->commit(testing::whole_step(testing::key("before"), 1, 0)).is_ok());
  ASSERT_EQ(store->storage_stats().checkpoints.passive, 0) << "a checkpoint was due before the big commit";
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &reader, SQLITE_OPEN_READONLY, PowerLossVfs::kName), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM executions", nullptr, nullptr, nullptr), SQLITE_OK);

  fill_the_disk = true;
  ASSERT_TRUE(store->commit(testing::whole_step(testing::key("held-back"), 1, 0, 1 << 20)).is_ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (store->storage_stats().checkpoints.failed == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const CheckpointStats checkpoints = store->storage_stats().checkpoints;
  vfs.set_disk_full(false);
  EXPECT_GE(checkpoints.by_writer, 1) << "the writer copied nothing between batches";
  EXPECT_GE(checkpoints.failed, 1) << "no checkpoint met the full disk";

  Result<CommitResult> after = store->commit(testing::whole_step(testing::key("after"), 1, 0));
  EXPECT_TRUE(after.is_ok()) << after.status().to_string();
  Result<ExecutionRecord> record = store->get_execution(testing::key("after"));
  ASSERT_TRUE(record.is_ok()) << record.status().to_string();
  EXPECT_EQ(record->version, 1);
}

}  // namespace
}  // namespace reprise::engine
