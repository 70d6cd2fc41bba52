// The store's write counts (storage_stats) and its WAL checkpoints: none
// inside a commit, the WAL bounded while readers hold on and brought back
// once they let go, and the same checkpoints at the same steps without a
// writer thread.
#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <latch>
#include <set>
#include <string>
#include <thread>

#include "engine/store/sqlite_store.hpp"
#include "store_test_util.hpp"

namespace reprise::engine {
namespace {

using testing::key;
using testing::step;
using testing::TempDir;

// A new execution with about `bytes` of history: a few WAL pages per KiB/4.
Transition big_start(int n, size_t bytes) {
  const ExecutionKey k = key("wf-" + std::to_string(n));
  Transition t;
  t.executions.push_back(step(k, 1));
  t.executions.back().events->data.append(bytes, static_cast<char>('a' + n % 26));
  return t;
}

std::unique_ptr<SqliteStore> open_store(const std::string& path, StoreOptions options) {
  auto store = SqliteStore::open(path, std::move(options));
  EXPECT_TRUE(store.is_ok()) << store.status().to_string();
  return store.is_ok() ? std::move(*store) : nullptr;
}

// The names of this process's threads, from /proc/self/task/*/comm.
std::set<std::string> checkpoint_test_thread_names() {
  std::set<std::string> names;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    if (std::getline(comm, name)) names.insert(name);
  }
  return names;
}

TEST(StoreThreads, TheWriterAndTheCheckpointerAreNamed) {
  // So that perf, top -H and /proc tell them apart from the engine's.
  TempDir dir;
  auto store = open_store(dir.file("names.db"), StoreOptions());
  ASSERT_NE(store, nullptr);
  const std::set<std::string> names = checkpoint_test_thread_names();
  EXPECT_TRUE(names.contains("writer")) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.contains("checkpointer")) << ::testing::PrintToString(names);
}

TEST(StorageStats, CountTransitionsBatchesAndSyncs) {
  // The first commit is held until kQueued transitions wait behind it: two
  // batches, of 1 and of kQueued.
  constexpr int kQueued = 12;
  std::latch holding(1), queued(1);
  std::atomic<int> commits{0};
  StoreOptions options;
  options.fault_hook = [&](FaultPoint p) {
    if (p == FaultPoint::kBeforeCommit && commits++ == 0) {
      holding.count_down();
      queued.wait();
    }
    return Status::ok();
  };
  TempDir dir;
  auto store = open_store(dir.file("stats.db"), std::move(options));
  ASSERT_NE(store, nullptr);
  const StorageStats before = store->storage_stats();
  EXPECT_EQ(before.writes.batches, 0);

  std::promise<void> first;
  store->commit_async(big_start(0, 10), [&](Result<CommitResult> r) {
    EXPECT_TRUE(r.is_ok());
    first.set_value();
  });
  holding.wait();
  std::vector<std::future<Result<CommitResult>>> done;
  for (int i = 1; i <= kQueued; ++i) {
    auto p = std::make_shared<std::promise<Result<CommitResult>>>();
    done.push_back(p->get_future());
    store->commit_async(big_start(i, 10), [p](Result<CommitResult> r) { p->set_value(std::move(r)); });
  }
  queued.count_down();
  first.get_future().get();
  for (auto& f : done) ASSERT_TRUE(f.get().is_ok());

  const StorageStats after = store->storage_stats();
  EXPECT_EQ(after.writes.transitions, kQueued + 1);
  EXPECT_EQ(after.writes.batches, 2);
  EXPECT_EQ(after.writes.largest_batch, kQueued);
  std::array<int64_t, kBatchSizeBuckets> expected{};
  expected[0] = 1;                                      // the batch of 1
  expected[std::bit_width(unsigned{kQueued}) - 1] = 1;  // 12 is in 8-15
  EXPECT_EQ(after.writes.batch_sizes, expected);
  // Each commit synced the WAL (the first in a new WAL syncs its header
  // too); nothing synced the database file: no checkpoint ran.
  EXPECT_GE(after.wal_syncs - before.wal_syncs, 2);
  EXPECT_LE(after.wal_syncs - before.wal_syncs, 3);
  EXPECT_EQ(after.database_syncs - before.database_syncs, 0);
}

TEST(WalCheckpoints, NoneRunsInsideACommit) {
  // Checkpoints never due: whatever syncs the database file would be SQLite's
  // automatic checkpoint, run inside the COMMIT that takes the WAL past
  // 1,000 pages.
  StoreOptions options;
  options.checkpoints.passive_after_pages = 1'000'000'000;
  options.checkpoints.restart_after_pages = 1'000'000'000;
  TempDir dir;
  auto store = open_store(dir.file("wal.db"), std::move(options));
  ASSERT_NE(store, nullptr);
  const StorageStats opened = store->storage_stats();  // opening a new file syncs it
  // 6 MiB, past SQLite's 1,000 pages of 4 KiB, in bursts of 20 to take few
  // commits (and syncs) to get there.
  for (int i = 0; i < 400; i += 20) {
    std::vector<std::future<Result<CommitResult>>> burst;
    for (int j = i; j < i + 20; ++j) {
      auto p = std::make_shared<std::promise<Result<CommitResult>>>();
      burst.push_back(p->get_future());
      store->commit_async(big_start(j, 16 << 10), [p](Result<CommitResult> r) { p->set_value(std::move(r)); });
    }
    for (auto& f : burst) ASSERT_TRUE(f.get().is_ok());
  }
  const StorageStats s = store->storage_stats();
  EXPECT_EQ(s.database_syncs - opened.database_syncs, 0) << "a checkpoint ran on the commit path";
  EXPECT_GT(s.checkpoints.wal_pages, 1000);
  EXPECT_EQ(s.checkpoints.passive + s.checkpoints.restarts + s.checkpoints.by_writer, 0);
  EXPECT_GE(s.wal_syncs - opened.wal_syncs, s.writes.batches) << "one sync per commit";
  EXPECT_LE(s.wal_syncs - opened.wal_syncs, s.writes.batches + 1) << "and the new WAL's header";
}

TEST(WalCheckpoints, BackgroundCheckpointsKeepTheWalSmallUnderSteadyWrites) {
  StoreOptions options;
  options.durability = Durability::kNormal;  // quicker; checkpoints sync either way
  options.checkpoints.passive_after_pages = 200;
  TempDir dir;
  auto store = open_store(dir.file("wal.db"), std::move(options));
  ASSERT_NE(store, nullptr);
  // Eight writers at once, as under load: the writer commits while the
  // checkpointer copies.
  std::vector<std::thread> writers;
  for (int w = 0; w < 8; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < 60; ++i) ASSERT_TRUE(store->commit(big_start(w * 1000 + i, 8 << 10)).is_ok());
    });
  }
  for (auto& t : writers) t.join();
  const StorageStats s = store->storage_stats();
  EXPECT_GT(s.checkpoints.passive, 0);
  EXPECT_GT(s.database_syncs, 0);
  EXPECT_GT(s.checkpoints.copied_pages, 1000);
  // The WAL was started over again and again: it never held much more than
  // the threshold and what the writer added during one checkpoint.
  EXPECT_LT(s.checkpoints.largest_wal_pages, 1000) << "the WAL was not started over";
  EXPECT_EQ(s.checkpoints.restarts, 0);
}

TEST(WalCheckpoints, AReaderHoldingASnapshotGrowsTheWalWithinItsBoundUntilItLetsGo) {
  StoreOptions options;
  options.durability = Durability::kNormal;  // quicker; checkpoints sync either way
  options.checkpoints.passive_after_pages = 50;
  options.checkpoints.restart_after_pages = 400;
  options.checkpoints.restart_wait = std::chrono::milliseconds(20);
  TempDir dir;
  const std::string path = dir.file("wal.db");
  auto store = open_store(path, std::move(options));
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->commit(big_start(0, 100)).is_ok());

  // A reader in a read transaction: the WAL frames after its snapshot may
  // not be copied, nor the WAL started over, until it ends.
  auto reader = SqliteDb::open_read_only(path);
  ASSERT_TRUE(reader.is_ok());
  ASSERT_TRUE((*reader)->exec("BEGIN").is_ok());
  ASSERT_TRUE((*reader)->exec("SELECT count(*) FROM executions").is_ok());
  // Past 400 pages, a restart waits for the reader, and cannot wait long
  // enough; the WAL grows past its bound while the reader holds on.
  int n = 1;
  const auto until_restart = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (store->storage_stats().checkpoints.restarts_busy == 0) {
    ASSERT_LT(std::chrono::steady_clock::now(), until_restart) << "no restart was tried";
    ASSERT_TRUE(store->commit(big_start(n++, 8 << 10)).is_ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const StorageStats held = store->storage_stats();
  EXPECT_GE(held.checkpoints.restarts, 1);
  EXPECT_GT(held.checkpoints.wal_pages, 400);

  ASSERT_TRUE((*reader)->exec("COMMIT").is_ok());
  // Let go: the next checkpoint copies it all and the WAL starts over.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (store->storage_stats().checkpoints.wal_pages >= 400) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << "the WAL stayed at " << store->storage_stats().checkpoints.wal_pages;
    ASSERT_TRUE(store->commit(big_start(n++, 8 << 10)).is_ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Without a writer thread, checkpoints run in commit_next_batch(), at the
// same steps on every run: the simulator stays deterministic.
StorageStats run_without_threads(const std::string& path) {
  StoreOptions options;
  options.writer_thread = false;
  options.durability = Durability::kNormal;  // quicker; checkpoints sync either way
  options.checkpoints.passive_after_pages = 100;
  auto store = open_store(path, std::move(options));
  if (store == nullptr) return {};
  for (int i = 0; i < 200; ++i) {
    store->commit_async(big_start(i, 4 << 10), [](Result<CommitResult> r) { EXPECT_TRUE(r.is_ok()); });
    if (i % 5 == 4) {
      while (store->commit_next_batch()) {
      }
    }
  }
  return store->storage_stats();
}

TEST(WalCheckpoints, WithoutWriterThreadCheckpointsRunInCommitNextBatchDeterministically) {
  TempDir dir;
  const StorageStats a = run_without_threads(dir.file("a.db"));
  const StorageStats b = run_without_threads(dir.file("b.db"));
  EXPECT_GT(a.checkpoints.passive, 0);
  EXPECT_EQ(a.checkpoints.by_writer, 0);
  EXPECT_LT(a.checkpoints.largest_wal_pages, 200);
  EXPECT_EQ(a.checkpoints.passive, b.checkpoints.passive);
  EXPECT_EQ(a.checkpoints.copied_pages, b.checkpoints.copied_pages);
  EXPECT_EQ(a.checkpoints.wal_pages, b.checkpoints.wal_pages);
  EXPECT_EQ(a.database_syncs, b.database_syncs);
}

}  // namespace
}  // namespace reprise::engine
