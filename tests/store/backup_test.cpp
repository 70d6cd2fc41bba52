// backup_database: a consistent copy of a database while it is written.
#include "engine/store/backup.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "engine/store/sqlite_store.hpp"
#include "store_test_util.hpp"

namespace reprise::engine {
namespace {

using testing::key;
using testing::TempDir;
using testing::whole_step;

// Commits whole steps of one execution per writer thread until told to stop;
// `acknowledged[i]` is the last step of execution i whose commit returned.
struct Load {
  static constexpr int kExecutions = 4;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> acknowledged[kExecutions] = {};
  std::vector<std::thread> threads;

  explicit Load(Store& store) {
    for (int i = 0; i < kExecutions; ++i) {
      threads.emplace_back([this, &store, i] {
        int64_t task = 0;
        for (int64_t n = 1; !stop.load(); ++n) {
          auto r = store.commit(whole_step(key("wf-" + std::to_string(i)), n, task, 2000));
          ASSERT_TRUE(r.is_ok()) << r.status().to_string();
          task = r->task_ids.front();
          acknowledged[i].store(n);
        }
      });
    }
  }
  ~Load() {
    stop = true;
    for (auto& t : threads) t.join();
  }
};

TEST(Backup, ACopyTakenUnderLoadHoldsEveryCommitAcknowledgedBeforeItAndOpens) {
  TempDir dir;
  auto store = SqliteStore::open(dir.file("live.db"));
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  Load load(**store);
  while (load.acknowledged[Load::kExecutions - 1].load() < 50) std::this_thread::yield();
  int64_t before[Load::kExecutions];
  for (int i = 0; i < Load::kExecutions; ++i) before[i] = load.acknowledged[i].load();

  auto report = backup_database(dir.file("live.db"), dir.file("copy.db"), false);
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  EXPECT_GT(report->pages, 0);
  EXPECT_GT(report->bytes, 0);
  int64_t after[Load::kExecutions];
  for (int i = 0; i < Load::kExecutions; ++i) after[i] = load.acknowledged[i].load();
  EXPECT_GT(after[0], before[0]) << "the writers went on while the copy was taken";

  // The copy opens as a store (quick_check included) and is one snapshot.
  auto copy = SqliteStore::open(dir.file("copy.db"));
  ASSERT_TRUE(copy.is_ok()) << copy.status().to_string();
  for (int i = 0; i < Load::kExecutions; ++i) {
    auto record = (*copy)->get_execution(key("wf-" + std::to_string(i)));
    ASSERT_TRUE(record.is_ok()) << record.status().to_string();
    const int64_t step = record->version;
    EXPECT_GE(step, before[i]) << "execution " << i << " lost an acknowledged commit";
    EXPECT_LE(step, after[i] + 1) << "execution " << i;
    EXPECT_EQ(record->state.substr(0, record->state.find('.')), "v=" + std::to_string(step)) << "state of one commit";
    auto history = (*copy)->read_history(key("wf-" + std::to_string(i)), 1, 1'000'000);
    ASSERT_TRUE(history.is_ok());
    ASSERT_FALSE(history->empty());
    EXPECT_EQ(history->back().last_event_id, 3 * step) << "history and state from the same commit";
  }
  EXPECT_EQ((*copy)->task_token_keys().front().secret, (*store)->task_token_keys().front().secret)
      << "the copy keeps the keys, so tokens issued before a restore still verify";
}

TEST(Backup, RefusesToOverwriteOrToCopyOntoItselfAndNamesAMissingSource) {
  TempDir dir;
  { ASSERT_TRUE(SqliteStore::open(dir.file("a.db")).is_ok()); }
  ASSERT_TRUE(backup_database(dir.file("a.db"), dir.file("b.db"), false).is_ok());
  auto again = backup_database(dir.file("a.db"), dir.file("b.db"), false);
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists) << again.status().to_string();
  EXPECT_TRUE(backup_database(dir.file("a.db"), dir.file("b.db"), true).is_ok());
  auto self = backup_database(dir.file("a.db"), dir.file("a.db"), true);
  EXPECT_EQ(self.status().code(), StatusCode::kInvalidArgument) << self.status().to_string();
  auto missing = backup_database(dir.file("none.db"), dir.file("c.db"), false);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("none.db"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.file("c.db")));
}

}  // namespace
}  // namespace reprise::engine
