// Worker::stop() cancels the polls in flight instead of waiting out the
// server's poll timeout (a minute remote, two seconds embedded), which is
// longer than a container's grace period for shutting down.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "../server/server_harness.hpp"
#include "reprise/client.hpp"
#include "reprise/worker.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

Workflow<int64_t> nothing(WorkflowContext&) { co_return 0; }
inline constexpr WorkflowDef<&nothing> nothing_wf{"nothing"};
int64_t noop(ActivityContext&) { return 0; }
inline constexpr Activity<&noop> noop_act{"noop"};

// How long stop() takes once every poller is parked in a poll.
std::chrono::milliseconds time_to_stop(const std::shared_ptr<Connection>& connection) {
  Worker worker(connection, {.task_queue = "idle", .workflow_threads = 1, .activity_threads = 1});
  worker.register_workflow(nothing_wf);
  worker.register_activity(noop_act);
  worker.start();
  std::this_thread::sleep_for(300ms);  // the polls are parked on the server
  const auto begin = std::chrono::steady_clock::now();
  worker.stop();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - begin);
}

std::atomic<bool> busy_job_running{false};
std::atomic<bool> busy_job_canceled{false};
std::atomic<std::chrono::steady_clock::time_point> busy_job_canceled_at{};
std::string busy_job(ActivityContext& ctx) {
  busy_job_running = true;
  for (int i = 0; i < 1200 && !ctx.cancel_requested(); ++i) std::this_thread::sleep_for(25ms);
  busy_job_canceled_at = std::chrono::steady_clock::now();
  busy_job_canceled = ctx.cancel_requested();
  throw CanceledError("shutting down");
}
inline constexpr Activity<&busy_job> busy_job_act{"busy_job"};
Workflow<std::string> busy(WorkflowContext& ctx) {
  co_return co_await ctx.execute(busy_job_act, ActivityOptions::start_to_close(1min));
}
inline constexpr WorkflowDef<&busy> busy_wf{"busy"};

TEST(WorkerStop, StopCancelsParkedPollsOnAnEmbeddedConnection) {
  TempDir dir;
  EXPECT_LT(time_to_stop(Connection::embedded(dir.file("stop.db"))), 500ms);
}

TEST(WorkerStop, StopCancelsParkedPollsOnARemoteConnection) {
  TempDir dir;
  Server server(dir.file("stop.db"), {"--poll-timeout-ms", "30000"});  // the harness's 500 ms would hide it
  auto connection = Connection::remote(server.address());
  EXPECT_LT(time_to_stop(connection), 1s);
  // The connection still works after its polls were canceled.
  Worker worker(connection, {.task_queue = "idle", .workflow_threads = 1, .activity_threads = 1});
  worker.register_workflow(nothing_wf);
  worker.start();
  Client client(connection);
  EXPECT_EQ(client.execute(nothing_wf, {.id = "after", .task_queue = "idle"}), 0);
  worker.stop();
}

// The activity poller waits for a free thread, not in a poll: stop() still
// gives the running activity its grace, then cancels it.
TEST(WorkerStop, StopWithEveryActivityThreadBusyGivesTheGraceThenCancels) {
  busy_job_running = false;
  busy_job_canceled = false;
  TempDir dir;
  auto connection = Connection::embedded(dir.file("busy.db"));
  Worker worker(connection,
                {.task_queue = "busy", .activity_threads = 1, .shutdown_grace = std::chrono::milliseconds(300)});
  worker.register_workflow(busy_wf);
  worker.register_activity(busy_job_act);
  worker.start();
  Client client(connection);
  auto run = client.start(busy_wf, {.id = "busy", .task_queue = "busy"});
  // The activity runs on the only activity thread. (A pending activity is
  // only scheduled: on a loaded machine it could still be on its way to the
  // worker when a fixed pause ran out, and stop() would find none to cancel.)
  for (int i = 0; i < 1000 && !busy_job_running; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(busy_job_running) << "the activity did not start within 10 s";
  const auto begin = std::chrono::steady_clock::now();
  worker.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 3s);
  EXPECT_TRUE(busy_job_canceled.load());
  EXPECT_GE(busy_job_canceled_at.load() - begin, 300ms) << "the activity was canceled before its grace ran out";
}

}  // namespace
}  // namespace reprise
