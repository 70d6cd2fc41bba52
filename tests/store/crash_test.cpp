// Crash safety: a real writer process is SIGKILLed in the middle of a stream
// of acknowledged transitions — at random moments and at exact fault points —
// and the reopened file must hold every acknowledged transition and no part
// of any other.
#include <gtest/gtest.h>

#include <random>

#include "child_process.hpp"
#include "crash_invariants.hpp"
#include "store_under_test.hpp"

namespace reprise::engine {
namespace {

using testing::ChildProcess;

constexpr int kThreads = 4;
constexpr int kExecutions = 16;
constexpr int kSteps = 200;

struct CrashRun {
  std::map<std::string, int64_t> acked;
  int status = 0;
  int64_t committed_before_fault = -1;  // transitions of the batches before the fault point's
};

// Runs the writer, killing it after `kill_after_acks` acknowledgements (0:
// let a fault point do it), and collects what it acknowledged.
CrashRun run_writer(const std::string& db, int kill_after_acks, std::vector<std::string> fault) {
  std::vector<std::string> args = {
      testing::store_child_path(), "write", db, std::to_string(kThreads), std::to_string(kExecutions),
      std::to_string(kSteps)};
  args.insert(args.end(), fault.begin(), fault.end());
  ChildProcess child(args);
  EXPECT_TRUE(child.started());
  CrashRun run;
  std::string line;
  int acks = 0;
  while (child.read_line(line)) {
    testing::record_ack(line, run.acked);
    if (line.rfind("fault-point committed ", 0) == 0) run.committed_before_fault = std::stoll(line.substr(22));
    if (line.rfind("error", 0) == 0) ADD_FAILURE() << line;
    if (++acks == kill_after_acks) child.kill(SIGKILL);
  }
  run.status = child.wait();
  return run;
}

void reopen_and_check(const std::string& db, const std::map<std::string, int64_t>& acked) {
  auto store = testing::open_any_store(db, StoreOptions{.quick_check = true});
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  testing::expect_whole_steps(**store, kExecutions, acked);
}

// Each test runs on both stores: a SQLite file, and a database of the test
// process's PostgreSQL (the writer process is killed, not PostgreSQL).
class StoreCrash : public testing::StoreFixture {
 protected:
  // A database for one round: a new file, or a new PostgreSQL database.
  std::string fresh_database(const std::string& name) {
    if (GetParam() == testing::StoreKind::kSqlite) return dir_.file(name);
    return testing::TestPostgres::get()->new_database();
  }
};

INSTANTIATE_TEST_SUITE_P(BothStores, StoreCrash,
                         ::testing::Values(testing::StoreKind::kSqlite, testing::StoreKind::kPostgres),
                         testing::store_kind_name);

TEST_P(StoreCrash, RandomKillsLoseNothingAcknowledged) {
  ASSERT_FALSE(testing::store_child_path().empty()) << "REPRISE_STORE_CHILD is not set";
  std::mt19937 rng(20261202);
  std::uniform_int_distribution<int> kill_point(1, kExecutions * kSteps - 1);
  // PostgreSQL's rounds cost more (a database each, commits over a socket):
  // fewer of them keep the suite's time.
  const int rounds = GetParam() == testing::StoreKind::kSqlite ? 24 : 8;
  for (int round = 0; round < rounds; ++round) {
    const std::string db = fresh_database("crash-" + std::to_string(round) + ".db");
    const int kill_after = kill_point(rng);
    SCOPED_TRACE("round " + std::to_string(round) + ", killed after " + std::to_string(kill_after) + " acks");
    CrashRun run = run_writer(db, kill_after, {});
    ASSERT_TRUE(WIFSIGNALED(run.status)) << "the writer finished before it was killed";
    reopen_and_check(db, run.acked);
  }
}

// Transitions in the file: each is one step of one execution.
int64_t steps_in_file(const std::string& db) {
  auto store = testing::open_any_store(db);
  EXPECT_TRUE(store.is_ok()) << store.status().to_string();
  if (!store.is_ok()) return -1;
  int64_t steps = 0;
  for (int e = 0; e < kExecutions; ++e) {
    Result<ExecutionRecord> rec = (*store)->get_execution(testing::key("e-" + std::to_string(e)));
    if (rec.is_ok()) steps += rec->version;
  }
  return steps;
}

TEST_P(StoreCrash, KillsAtExactFaultPoints) {
  for (const char* point : {"before-commit", "after-commit"}) {
    for (int batch : {1, 2, 7, 40, 150}) {
      const std::string db = fresh_database(std::string("fault-") + point + std::to_string(batch) + ".db");
      SCOPED_TRACE(std::string(point) + " of batch " + std::to_string(batch));
      CrashRun run = run_writer(db, 0, {point, std::to_string(batch)});
      ASSERT_TRUE(WIFSIGNALED(run.status));
      ASSERT_GE(run.committed_before_fault, 0) << "the writer did not reach the fault point";
      reopen_and_check(db, run.acked);
      // Killed after its commit, the batch is there though nobody heard of it;
      // killed before, it is not: either way each step is whole.
      const int64_t steps = steps_in_file(db);
      if (std::string(point) == "before-commit") {
        EXPECT_EQ(steps, run.committed_before_fault) << "the batch killed before its commit is not in the file";
      } else {
        EXPECT_GT(steps, run.committed_before_fault) << "the batch killed after its commit is in the file";
      }
    }
  }
}

TEST_P(StoreCrash, WritingResumesAfterACrash) {
  const std::string& db = db_;
  CrashRun first = run_writer(db, 300, {});
  ASSERT_TRUE(WIFSIGNALED(first.status));
  std::map<std::string, int64_t> resumed;
  {
    auto store = testing::open_any_store(db);
    ASSERT_TRUE(store.is_ok());
    // What survived is what the writer acknowledged, or more, and whole.
    testing::expect_whole_steps(**store, kExecutions, first.acked);
    auto tasks = (*store)->load_tasks(0, 1000);
    ASSERT_TRUE(tasks.is_ok());
    ASSERT_EQ(tasks->size(), static_cast<size_t>(kExecutions)) << "each execution has its one pending task";
    // The next step of every execution commits on top of what survived.
    for (const auto& task : *tasks) {
      auto rec = (*store)->get_execution(task.execution);
      ASSERT_TRUE(rec.is_ok());
      EXPECT_EQ(task.payload, task.execution.workflow_id + ":" + std::to_string(rec->version));
      ASSERT_TRUE((*store)->commit(testing::whole_step(task.execution, rec->version + 1, task.task_id)).is_ok());
      resumed[task.execution.workflow_id] = rec->version + 1;
    }
  }
  auto store = testing::open_any_store(db);
  ASSERT_TRUE(store.is_ok());
  testing::expect_whole_steps(**store, kExecutions, resumed);
  for (const auto& [workflow_id, step] : resumed) {
    EXPECT_EQ((*store)->get_execution(testing::key(workflow_id))->version, step) << workflow_id;
  }
}

}  // namespace
}  // namespace reprise::engine
