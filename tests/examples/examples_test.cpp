// The examples as users would run them: against a real server with the
// cache off (every task replays from history) and with a cache of one,
// embedded, with the worker process killed in the middle of the run, and
// the versioning example's old histories replayed on the new code.
#include "examples/examples.hpp"

#include <csignal>
#include <thread>

#include "../server/server_harness.hpp"
#include "reprise/testing.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

// Sanitizer runs (10-20x slower) set REPRISE_TEST_PAYLOAD_MB to keep the
// big-payload steps within their deadlines.
int64_t report_megabytes() {
  const char* mb = std::getenv("REPRISE_TEST_PAYLOAD_MB");
  return mb ? std::atoll(mb) : 50;
}

// Cache size 0: every task replays its whole history; 1: the workflows
// running side by side evict one another, so most tasks miss the cache.
class ExamplesWithCache : public ::testing::TestWithParam<int> {};

TEST_P(ExamplesWithCache, AllEndAsTheyShouldWhenTasksReplayFromHistory) {
  TempDir dir;
  Server server(dir.file("examples.db"));
  auto connection = Connection::remote(server.address());
  Worker worker(connection, {.task_queue = "ex", .cache_size = GetParam()});
  examples::register_all(worker);
  worker.start();
  Client client(connection);
  EXPECT_TRUE(examples::run_all(client, "ex", "cache" + std::to_string(GetParam()) + "-", stdout, report_megabytes()));
  worker.stop();
}

INSTANTIATE_TEST_SUITE_P(CacheOffAndTiny, ExamplesWithCache, ::testing::Values(0, 1),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "cache" + std::to_string(info.param);
                         });

TEST(Examples, AllEndAsTheyShouldEmbeddedWithNoServer) {
  TempDir dir;
  auto connection = Connection::embedded(dir.file("embedded.db"));
  Worker worker(connection, {.task_queue = "ex"});
  examples::register_all(worker);
  worker.start();
  Client client(connection);
  EXPECT_TRUE(examples::run_all(client, "ex", "embedded-", stdout, report_megabytes()));
  worker.stop();
}

TEST(Examples, AWorkerKilledMidRunIsReplacedAndTheWorkflowsFinish) {
  TempDir dir;
  Server server(dir.file("killed.db"), {"--poll-timeout-ms", "1000"});
  const char* binary = std::getenv("REPRISE_EXAMPLES");
  ASSERT_NE(binary, nullptr) << "REPRISE_EXAMPLES must name the reprise-examples binary";
  auto start_worker = [&] {
    auto w = std::make_unique<engine::testing::ChildProcess>(
        std::vector<std::string>{binary, "--address", server.address(), "worker"});
    std::string line;
    EXPECT_TRUE(w->read_line(line)) << "the worker did not start";
    return w;
  };
  auto first = start_worker();
  auto connection = Connection::remote(server.address());
  Client client(connection);
  // Long loops: many tasks, so the kill lands in the middle.
  std::vector<WorkflowHandle<examples::Tally>> runs;
  for (int i = 0; i < 4; ++i) {
    runs.push_back(client.start(examples::feed_loop_wf, {.id = "loop-" + std::to_string(i), .task_queue = "examples"},
                                examples::Tally{}, int64_t{40}, int64_t{10}));
  }
  // The same loop in the stackful style: its stacks die with the worker.
  std::vector<WorkflowHandle<examples::Tally>> stackful_runs;
  for (int i = 0; i < 2; ++i) {
    stackful_runs.push_back(client.start(examples::feed_loop_stackful_wf,
                                         {.id = "stackful-loop-" + std::to_string(i), .task_queue = "examples"},
                                         examples::Tally{}, int64_t{40}, int64_t{10}));
  }
  for (int i = 0; i < 200 && client.handle(examples::feed_loop_wf, "loop-0").describe().info().history_length() < 12;
       ++i) {
    std::this_thread::sleep_for(10ms);
  }
  first->kill(SIGKILL);
  first->wait();
  auto second = start_worker();
  for (auto& run : runs) {
    const examples::Tally tally = run.result(60s);
    EXPECT_EQ(tally.rounds, 40);
    EXPECT_EQ(tally.runs, 4);
  }
  for (auto& run : stackful_runs) {
    const examples::Tally tally = run.result(60s);
    EXPECT_EQ(tally.rounds, 40);
    EXPECT_EQ(tally.runs, 4);
  }
  second->kill(SIGTERM);
  second->wait();
}

TEST(Examples, HistoriesFromVersionOneReplayOnVersionTwo) {
  testing::TestEnvironment env;
  Client client(env.connection());
  {
    Worker v1_worker(env.connection(), {.task_queue = "ship"});
    v1_worker.register_workflow(examples::shipping_v1_wf);
    v1_worker.register_activity(examples::ship_activity);
    v1_worker.start();
    EXPECT_EQ(client.execute(examples::shipping_v1_wf, {.id = "old", .task_queue = "ship"}, std::string("o1")),
              "shipped o1");
    v1_worker.stop();
  }
  const v1::History old_history = fetch_history(*env.connection(), "old");
  EXPECT_NO_THROW(testing::replay(old_history, examples::shipping_v2_wf))
      << "patched() takes the old path for a history without the patch";

  Worker v2_worker(env.connection(), {.task_queue = "ship"});
  v2_worker.register_workflow(examples::shipping_v2_wf);
  v2_worker.register_activity(examples::ship_activity);
  v2_worker.register_activity(examples::fraud_check_activity);
  v2_worker.start();
  EXPECT_EQ(client.execute(examples::shipping_v2_wf, {.id = "new", .task_queue = "ship"}, std::string("o2")),
            "o2 looks fine, shipped o2");
  v2_worker.stop();
  try {
    testing::replay(fetch_history(*env.connection(), "new"), examples::shipping_v1_wf);
    FAIL() << "a version-2 history replayed on version 1";
  } catch (const NonDeterminismError& e) {
    // The patch marker itself asks nothing of code without the patched()
    // call; the fraud check it guarded is what version 1 does not do.
    EXPECT_NE(std::string(e.what()).find("history has ActivityTaskScheduled 'fraud_check' (activity id 1), the "
                                         "workflow code did ScheduleActivityTask 'ship' (activity id 1) now"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace reprise
