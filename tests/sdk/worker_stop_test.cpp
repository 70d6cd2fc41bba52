// Worker::stop() cancels the polls in flight instead of waiting out the
// server's poll timeout (a minute remote, two seconds embedded), which is
// longer than a container's grace period for shutting down.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace reprise
