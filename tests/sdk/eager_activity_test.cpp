// Eager activity execution through the SDK against a real reprise-server: a
// workflow task that schedules an activity the worker runs, while an activity
// thread is free, gets it back started in the completion's answer and runs it
// with no poll; otherwise the activity goes through its queue as before.
#include <atomic>
#include <chrono>
#include <thread>

#include "../server/server_harness.hpp"
#include "forwarding_connection.hpp"
#include "reprise/client.hpp"
#include "reprise/testing.hpp"
#include "reprise/worker.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

std::string shout(ActivityContext&, std::string word) { return word + "!"; }
inline constexpr Activity<&shout> shout_activity{"shout"};

// Three activities one after the other: each is scheduled by its own task.
Workflow<std::string> three_shouts(WorkflowContext& ctx, std::string word) {
  auto options = ActivityOptions::start_to_close(10s);
  std::string out = co_await ctx.execute(shout_activity, options, word);
  out = co_await ctx.execute(shout_activity, options, out);
  co_return co_await ctx.execute(shout_activity, options, out);
}
inline constexpr WorkflowDef<&three_shouts> three_shouts_wf{"three_shouts"};

// Two activities scheduled by the same task.
Workflow<std::string> two_at_once(WorkflowContext& ctx, std::string word) {
  auto options = ActivityOptions::start_to_close(10s);
  auto first = ctx.execute(shout_activity, options, word);
  auto second = ctx.execute(shout_activity, options, word + "?");
  std::string a = co_await first;
  co_return a + " " + co_await second;
}
inline constexpr WorkflowDef<&two_at_once> two_at_once_wf{"two_at_once"};

// Counts the activity tasks a worker gets from polls and from completions.
class CountingConnection : public ForwardingConnection {
 public:
  using ForwardingConnection::ForwardingConnection;
  v1::PollActivityTaskResponse poll_activity_task(const v1::PollActivityTaskRequest& r) override {
    v1::PollActivityTaskResponse task = ForwardingConnection::poll_activity_task(r);
    if (!task.task_token().empty()) ++polled;
    return task;
  }
  v1::CompleteWorkflowTaskResponse complete_workflow_task(const v1::CompleteWorkflowTaskRequest& r) override {
    for (const v1::Command& c : r.commands()) {
      if (c.schedule_activity_task().request_eager_execution()) ++asked;
    }
    v1::CompleteWorkflowTaskResponse out = ForwardingConnection::complete_workflow_task(r);
    eager += out.activity_tasks_size();
    return out;
  }
  std::atomic<int> polled{0}, asked{0}, eager{0};
};

std::vector<v1::HistoryEvent> activity_starts(Connection& connection, const std::string& workflow_id) {
  v1::GetHistoryRequest r;
  r.mutable_workflow_execution()->set_workflow_id(workflow_id);
  std::vector<v1::HistoryEvent> out;
  const v1::GetHistoryResponse history = connection.get_history(r, 10s);
  for (const auto& e : history.history().events()) {
    if (e.event_type() == v1::EVENT_TYPE_ACTIVITY_TASK_STARTED) out.push_back(e);
  }
  return out;
}

TEST(EagerActivities, AnActivityOnTheWorkersOwnQueueRunsWithoutAPoll) {
  TempDir dir;
  Server server(dir.file("eager.db"));
  auto connection = std::make_shared<CountingConnection>(Connection::remote(server.address()));
  Worker worker(connection, {.task_queue = "q", .workflow_threads = 1, .activity_threads = 2, .identity = "w1"});
  worker.register_workflow(three_shouts_wf);
  worker.register_activity(shout_activity);
  worker.start();
  Client client(connection);
  EXPECT_EQ(client.start(three_shouts_wf, {.id = "eager-1", .task_queue = "q"}, std::string("hey")).result(30s),
            "hey!!!");
  worker.stop();
  EXPECT_EQ(connection->asked.load(), 3);
  EXPECT_EQ(connection->eager.load(), 3) << "each activity came back in its task's completion";
  EXPECT_EQ(connection->polled.load(), 0) << "and none was polled";
  auto starts = activity_starts(*connection, "eager-1");
  ASSERT_EQ(starts.size(), 3u);
  for (const auto& e : starts) EXPECT_EQ(e.activity_task_started().identity(), "w1");
}

TEST(EagerActivities, TurnedOffEveryActivityIsPolled) {
  TempDir dir;
  Server server(dir.file("polled.db"));
  auto connection = std::make_shared<CountingConnection>(Connection::remote(server.address()));
  Worker worker(connection, {.task_queue = "q", .eager_activities = false});
  worker.register_workflow(three_shouts_wf);
  worker.register_activity(shout_activity);
  worker.start();
  Client client(connection);
  EXPECT_EQ(client.start(three_shouts_wf, {.id = "polled-1", .task_queue = "q"}, std::string("hey")).result(30s),
            "hey!!!");
  worker.stop();
  EXPECT_EQ(connection->asked.load(), 0);
  EXPECT_EQ(connection->eager.load(), 0);
  EXPECT_EQ(connection->polled.load(), 3);
}

TEST(EagerActivities, WithoutAFreeActivityThreadOrTheActivityTheWorkerAsksForNone) {
  TempDir dir;
  Server server(dir.file("busy.db"));
  // One activity thread: of two activities scheduled together, one is run
  // eagerly and the other goes to the queue.
  auto connection = std::make_shared<CountingConnection>(Connection::remote(server.address()));
  Worker worker(connection, {.task_queue = "q", .workflow_threads = 1, .activity_threads = 1});
  worker.register_workflow(two_at_once_wf);
  worker.register_activity(shout_activity);
  worker.start();
  Client client(connection);
  EXPECT_EQ(client.start(two_at_once_wf, {.id = "busy-1", .task_queue = "q"}, std::string("hey")).result(30s),
            "hey! hey?!");
  worker.stop();
  EXPECT_EQ(connection->asked.load(), 1);
  EXPECT_EQ(connection->eager.load(), 1);
  EXPECT_EQ(connection->polled.load(), 1);

  // A worker without the activity asks for none; another worker polls it.
  auto workflows_only = std::make_shared<CountingConnection>(Connection::remote(server.address()));
  Worker decider(workflows_only, {.task_queue = "q2"});
  decider.register_workflow(three_shouts_wf);
  decider.start();
  Worker doer(connection, {.task_queue = "q2"});
  doer.register_activity(shout_activity);
  doer.start();
  EXPECT_EQ(
      Client(connection).start(three_shouts_wf, {.id = "split-1", .task_queue = "q2"}, std::string("a")).result(30s),
      "a!!!");
  decider.stop();
  doer.stop();
  EXPECT_EQ(workflows_only->asked.load(), 0);
  EXPECT_EQ(connection->polled.load(), 1 + 3);
}

std::atomic<int> slow_attempts{0};
std::string slow_shout(ActivityContext& ctx, std::string word) {
  ++slow_attempts;
  std::this_thread::sleep_for(300ms);
  return word + "@" + std::to_string(ctx.info().attempt);
}
inline constexpr Activity<&slow_shout> slow_shout_activity{"slow_shout"};

Workflow<std::string> one_slow_shout(WorkflowContext& ctx, std::string word) {
  co_return co_await ctx.execute(slow_shout_activity, ActivityOptions::start_to_close(10s), word);
}
inline constexpr WorkflowDef<&one_slow_shout> one_slow_shout_wf{"one_slow_shout"};

// TestEnvironment skips time only while nothing is in a worker's hands: an
// activity handed out in a completion's answer counts as handed out, or the
// skip would pass its start-to-close timeout while it runs.
TEST(EagerActivities, TestEnvironmentDoesNotSkipTimeWhileAnEagerActivityRuns) {
  slow_attempts = 0;
  testing::TestEnvironment env;
  Worker worker(env.connection(), {.task_queue = "t", .workflow_threads = 1, .activity_threads = 1});
  worker.register_workflow(one_slow_shout_wf);
  worker.register_activity(slow_shout_activity);
  worker.start();
  Client client(env.connection());
  EXPECT_EQ(client.start(one_slow_shout_wf, {.id = "slow-1", .task_queue = "t"}, std::string("hi")).result(30s),
            "hi@1");
  worker.stop();
  EXPECT_EQ(slow_attempts.load(), 1) << "the first attempt was not timed out under it";
}

}  // namespace
}  // namespace reprise
