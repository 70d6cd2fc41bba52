// WorkerOptions::metrics: a Worker against a real reprise-server counts its
// task slots, sticky cache hits and misses, replays, activity latency and
// failures and poll latency into the registry the program gave it.
#include <chrono>
#include <cstdlib>
#include <stdexcept>

#include "../server/server_harness.hpp"
#include "reprise/client.hpp"
#include "reprise/metrics.hpp"
#include "reprise/worker.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

std::string greet(ActivityContext&, std::string name) { return "hello " + name; }
inline constexpr Activity<&greet> greet_activity{"greet"};

std::string refuse(ActivityContext&, std::string) { throw std::runtime_error("refused"); }
inline constexpr Activity<&refuse> refuse_activity{"refuse"};

// Two activities, one after the other: three workflow tasks, the last two
// served from the sticky cache.
Workflow<std::string> greet_twice(WorkflowContext& ctx, std::string name) {
  std::string once = co_await ctx.execute(greet_activity, ActivityOptions::start_to_close(10s), name);
  co_return co_await ctx.execute(greet_activity, ActivityOptions::start_to_close(10s), once);
}
inline constexpr WorkflowDef<&greet_twice> greet_twice_wf{"greet_twice"};

Workflow<std::string> refused(WorkflowContext& ctx, std::string name) {
  try {
    co_return co_await ctx.execute(refuse_activity, ActivityOptions::start_to_close(10s).maximum_attempts(1), name);
  } catch (const ActivityError&) {
    co_return std::string("refused");
  }
}
inline constexpr WorkflowDef<&refused> refused_wf{"refused"};

double value_of(const std::string& page, const std::string& series) {
  const size_t at = page.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::strtod(page.c_str() + at + series.size() + 2, nullptr);
}

TEST(WorkerMetrics, CountsTasksCacheReplaysAndActivities) {
  TempDir dir;
  Server server(dir.file("worker_metrics.db"));
  auto connection = Connection::remote(server.address());
  auto registry = std::make_shared<metrics::Registry>();
  Worker worker(connection, {.task_queue = "wq", .metrics = registry});
  worker.register_workflow(greet_twice_wf);
  worker.register_workflow(refused_wf);
  worker.register_activity(greet_activity);
  worker.register_activity(refuse_activity);
  worker.start();
  Client client(connection);
  EXPECT_EQ(client.execute(greet_twice_wf, {.id = "g1", .task_queue = "wq"}, std::string("a")), "hello hello a");
  EXPECT_EQ(client.execute(greet_twice_wf, {.id = "g2", .task_queue = "wq"}, std::string("b")), "hello hello b");
  EXPECT_EQ(client.execute(refused_wf, {.id = "r1", .task_queue = "wq"}, std::string("c")), "refused");
  worker.stop();

  const std::string page = "\n" + registry->scrape();
  EXPECT_EQ(
      value_of(page, "reprise_activity_execution_latency_seconds_count{task_queue=\"wq\",activity_type=\"greet\"}"), 4)
      << page;
  EXPECT_EQ(value_of(page, "reprise_activity_execution_failed_total{task_queue=\"wq\",activity_type=\"refuse\"}"), 1);
  EXPECT_EQ(page.find("reprise_activity_execution_failed_total{task_queue=\"wq\",activity_type=\"greet\"}"),
            std::string::npos);
  // Each run's first task replays (nothing cached yet); the tasks after an
  // activity find the run in the cache.
  const double misses = value_of(page, "reprise_sticky_cache_miss_total{task_queue=\"wq\"}");
  const double hits = value_of(page, "reprise_sticky_cache_hit_total{task_queue=\"wq\"}");
  EXPECT_EQ(misses, 3);
  EXPECT_EQ(hits, 5);  // two per greet_twice after its activities, one for refused
  EXPECT_EQ(value_of(page, "reprise_workflow_task_replay_latency_seconds_count{task_queue=\"wq\"}"), misses);
  EXPECT_EQ(value_of(page, "reprise_worker_task_slots_used{task_queue=\"wq\",worker_type=\"workflow\"}"), 0);
  EXPECT_EQ(value_of(page, "reprise_worker_task_slots_used{task_queue=\"wq\",worker_type=\"activity\"}"), 0);
  EXPECT_EQ(value_of(page, "reprise_sticky_cache_size{task_queue=\"wq\"}"), 0);  // every run finished
  EXPECT_GT(
      value_of(page, "reprise_long_request_latency_seconds_count{task_queue=\"wq\",operation=\"PollWorkflowTask\"}"),
      0);
  EXPECT_EQ(server.terminate(), 0);
}

}  // namespace
}  // namespace reprise
