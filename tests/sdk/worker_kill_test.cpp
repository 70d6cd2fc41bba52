// A worker process killed with SIGKILL while it provably holds a task: its
// activity has said it started and never returns. The attempt it held must
// time out on the server and be retried on another worker, and the workflow,
// which the dead worker also had in its cache, must finish there.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>

#include "../server/server_harness.hpp"
#include "held_task.hpp"
#include "reprise/client.hpp"
#include "reprise/history_file.hpp"
#include "reprise/worker.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

TEST(WorkerKill, AnActivityHeldByAKilledWorkerIsRetriedOnAnotherAndTheWorkflowFinishesThere) {
  const char* binary = std::getenv("REPRISE_HELD_TASK_WORKER");
  ASSERT_NE(binary, nullptr) << "REPRISE_HELD_TASK_WORKER must name the held_task_worker binary";
  TempDir dir;
  Server server(dir.file("kill.db"));
  ChildProcess doomed({binary, "--address", server.address(), "--identity", "doomed"});
  std::string line;
  ASSERT_TRUE(doomed.read_line(line)) << "the worker to be killed did not start";
  ASSERT_EQ(line, "ready");

  auto connection = Connection::remote(server.address());
  Client client(connection);
  auto run =
      client.start(held_task::held_wf, {.id = "held-1", .task_queue = held_task::kQueue}, std::string("order-1"));
  // Only once the activity has started in the doomed process does it hold a
  // task that only the server's timeout can take back.
  ASSERT_TRUE(doomed.read_line(line)) << "the doomed worker exited before its activity started";
  ASSERT_EQ(line, "holding order-1 attempt 1");
  doomed.kill(SIGKILL);
  doomed.wait();

  Worker survivor(connection, {.task_queue = held_task::kQueue, .identity = "survivor"});
  survivor.register_workflow(held_task::held_wf);
  survivor.register_activity(held_task::step_activity);
  survivor.start();
  EXPECT_EQ(run.result(30s), "order-1 done on attempt 2") << "the attempt the dead worker held was retried";
  survivor.stop();

  // The history says the same: the attempt that completed was the second,
  // on the survivor, after the first timed out; the last workflow task,
  // sticky to the dead worker's cache, was taken back and ran on the survivor.
  const v1::History history = fetch_history(*connection, "held-1");
  int activity_starts = 0;
  std::string last_workflow_task_identity;
  for (const v1::HistoryEvent& e : history.events()) {
    if (e.has_activity_task_started()) {
      ++activity_starts;
      EXPECT_EQ(e.activity_task_started().attempt(), 2);
      EXPECT_EQ(e.activity_task_started().identity(), "survivor");
      EXPECT_NE(e.activity_task_started().last_failure().message(), "") << "attempt 1's failure: its timeout";
    }
    if (e.has_workflow_task_started()) last_workflow_task_identity = e.workflow_task_started().identity();
  }
  EXPECT_EQ(activity_starts, 1);
  EXPECT_EQ(last_workflow_task_identity, "survivor");
  ASSERT_TRUE(history.events(history.events_size() - 1).has_workflow_execution_completed());
}

// The same for a workflow task an activity's answer handed the worker
// (eager, no poll): started on the server and held by a dead worker, it
// times out (1 s) and runs on another worker; the activity is not run again
// and the workflow completes once.
TEST(WorkerKill, AnEagerWorkflowTaskHeldByAKilledWorkerTimesOutAndRunsOnAnother) {
  const char* binary = std::getenv("REPRISE_HELD_TASK_WORKER");
  ASSERT_NE(binary, nullptr) << "REPRISE_HELD_TASK_WORKER must name the held_task_worker binary";
  TempDir dir;
  Server server(dir.file("kill-eager.db"));
  ChildProcess doomed({binary, "--address", server.address(), "--identity", "doomed", "--hold", "workflow-task"});
  std::string line;
  ASSERT_TRUE(doomed.read_line(line)) << "the worker to be killed did not start";
  ASSERT_EQ(line, "ready");

  auto connection = Connection::remote(server.address());
  Client client(connection);
  auto run = client.start(held_task::held_after_step_wf,
                          {.id = "eager-held", .task_queue = held_task::kQueue, .workflow_task_timeout = 1s},
                          std::string("order-2"));
  ASSERT_TRUE(doomed.read_line(line));
  ASSERT_EQ(line, "eager workflow task") << "the task after the activity came in the activity's answer";
  ASSERT_TRUE(doomed.read_line(line));
  ASSERT_EQ(line, "holding the workflow task after order-2 stepped");
  doomed.kill(SIGKILL);
  doomed.wait();

  Worker survivor(connection, {.task_queue = held_task::kQueue, .identity = "survivor"});
  survivor.register_workflow(held_task::held_after_step_wf);
  survivor.register_activity(held_task::quick_activity);
  survivor.start();
  EXPECT_EQ(run.result(30s), "order-2 stepped and finished");
  survivor.stop();

  const v1::History history = fetch_history(*connection, "eager-held");
  int activities_completed = 0, timed_out = 0, closes = 0;
  std::string last_workflow_task_identity;
  for (const v1::HistoryEvent& e : history.events()) {
    activities_completed += e.has_activity_task_completed();
    timed_out += e.has_workflow_task_timed_out();
    closes += e.has_workflow_execution_completed();
    if (e.has_workflow_task_started()) last_workflow_task_identity = e.workflow_task_started().identity();
  }
  EXPECT_EQ(activities_completed, 1) << "the activity ran once";
  EXPECT_EQ(timed_out, 1) << "the task the dead worker held timed out";
  EXPECT_EQ(closes, 1);
  EXPECT_EQ(last_workflow_task_identity, "survivor");
}

}  // namespace
}  // namespace reprise
