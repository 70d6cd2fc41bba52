// Crash safety: a real writer process is SIGKILLed in the middle of a stream
// of acknowledged transitions — at random moments and at exact fault points —
// and the reopened file must hold every acknowledged transition and no part
// of any other.
#include <gtest/gtest.h>

#include <random>

#include "child_process.hpp"
#include "crash_invariants.hpp"

namespace reprise::engine {
namespace {

using testing::ChildProcess;
using testing::TempDir;

constexpr int kThreads = 4;
constexpr int kExecutions = 16;
constexpr int kSteps = 200;

struct CrashRun {
  std::map<std::string, int64_t> acked;
  int status = 0;
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
    if (line.rfind("error", 0) == 0) ADD_FAILURE() << line;
    if (++acks == kill_after_acks) child.kill(SIGKILL);
  }
  run.status = child.wait();
  return run;
}

void reopen_and_check(const std::string& db, const std::map<std::string, int64_t>& acked) {
  auto store = SqliteStore::open(db, StoreOptions{.quick_check = true});
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  testing::expect_whole_steps(**store, kExecutions, acked);
}

TEST(StoreCrash, RandomKillsLoseNothingAcknowledged) {
  ASSERT_FALSE(testing::store_child_path().empty()) << "REPRISE_STORE_CHILD is not set";
  std::mt19937 rng(20261202);
  std::uniform_int_distribution<int> kill_point(1, kExecutions * kSteps - 1);
  for (int round = 0; round < 24; ++round) {
    TempDir dir;
    const std::string db = dir.file("crash.db");
    const int kill_after = kill_point(rng);
    SCOPED_TRACE("round " + std::to_string(round) + ", killed after " + std::to_string(kill_after) + " acks");
    CrashRun run = run_writer(db, kill_after, {});
    ASSERT_TRUE(WIFSIGNALED(run.status)) << "the writer finished before it was killed";
    reopen_and_check(db, run.acked);
  }
}

TEST(StoreCrash, KillsAtExactFaultPoints) {
  for (const char* point : {"before-commit", "after-commit"}) {
    for (int batch : {1, 2, 7, 40, 150}) {
      TempDir dir;
      const std::string db = dir.file("fault.db");
      SCOPED_TRACE(std::string(point) + " of batch " + std::to_string(batch));
      CrashRun run = run_writer(db, 0, {point, std::to_string(batch)});
      ASSERT_TRUE(WIFSIGNALED(run.status));
      reopen_and_check(db, run.acked);
      // Killed after its commit, the batch is there though nobody heard of it;
      // killed before, it is not: either way each step is whole.
    }
  }
}

TEST(StoreCrash, WritingResumesAfterACrash) {
  TempDir dir;
  const std::string db = dir.file("resume.db");
  CrashRun first = run_writer(db, 300, {});
  ASSERT_TRUE(WIFSIGNALED(first.status));
  auto store = SqliteStore::open(db);
  ASSERT_TRUE(store.is_ok());
  // The next step of every execution commits on top of what survived.
  auto tasks = (*store)->load_tasks(0, 1000);
  for (const auto& task : *tasks) {
    auto rec = (*store)->get_execution(task.execution);
    ASSERT_TRUE(rec.is_ok());
    Transition t;
    t.executions.push_back(testing::step(task.execution, rec->version + 1));
    t.remove_tasks.push_back(task.task_id);
    ASSERT_TRUE((*store)->commit(std::move(t)).is_ok());
  }
}

}  // namespace
}  // namespace reprise::engine
