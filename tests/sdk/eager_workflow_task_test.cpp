// Fewer round trips through the SDK against a real reprise-server: a worker
// that holds a workflow in its cache gets the workflow task an activity's
// result wakes in the answer to CompleteActivity and runs it with no poll;
// Client::execute is one call: the start waits on the server for the
// chain's result (wait_for_result), across continue-as-new, and a start
// retried with the same request id waits for (or finds) the same result.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "../server/server_harness.hpp"
#include "forwarding_connection.hpp"
#include "reprise/client.hpp"
#include "reprise/testing.hpp"
#include "reprise/worker.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

std::string greet(ActivityContext&, std::string name) { return "Hello, " + name + "!"; }
inline constexpr Activity<&greet> greet_activity{"greet"};

Workflow<std::string> hello(WorkflowContext& ctx, std::string name) {
  co_return co_await ctx.execute(greet_activity, ActivityOptions::start_to_close(10s), name);
}
inline constexpr WorkflowDef<&hello> hello_wf{"hello"};

Workflow<std::string> countdown(WorkflowContext& ctx, int64_t n);
inline constexpr WorkflowDef<&countdown> countdown_wf{"countdown"};
Workflow<std::string> countdown(WorkflowContext& ctx, int64_t n) {
  if (n > 0) co_await ctx.continue_as_new(countdown_wf, n - 1);
  co_return "lift-off";
}

// Open for a second: long enough for a second start to find it running.
Workflow<std::string> resting(WorkflowContext& ctx) {
  co_await ctx.sleep(1s);
  co_return "rested";
}
inline constexpr WorkflowDef<&resting> resting_wf{"resting"};

// For the no-free-thread case: `blocker`'s task holds the worker's only
// workflow thread (it waits for a local activity) while `patient`'s
// activity finishes.
std::atomic<bool> thread_held{false}, let_go{false};
void wait_for(const std::atomic<bool>& flag) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!flag && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
}
std::string hold(ActivityContext&) {
  thread_held = true;
  wait_for(let_go);
  return "held";
}
inline constexpr Activity<&hold> hold_activity{"hold"};
Workflow<std::string> blocker(WorkflowContext& ctx) {
  co_return co_await ctx.execute_local(hold_activity, LocalActivityOptions::start_to_close(30s));
}
inline constexpr WorkflowDef<&blocker> blocker_wf{"blocker"};
std::string patient_greet(ActivityContext&, std::string name) {
  wait_for(thread_held);
  return "Hello, " + name + "!";
}
inline constexpr Activity<&patient_greet> patient_greet_activity{"patient_greet"};
Workflow<std::string> patient(WorkflowContext& ctx, std::string name) {
  co_return co_await ctx.execute(patient_greet_activity, ActivityOptions::start_to_close(30s), name);
}
inline constexpr WorkflowDef<&patient> patient_wf{"patient"};

// Counts workflow tasks from polls and from activity answers, and the calls
// a client makes.
class CountingConnection : public ForwardingConnection {
 public:
  using ForwardingConnection::ForwardingConnection;
  v1::PollWorkflowTaskResponse poll_workflow_task(const v1::PollWorkflowTaskRequest& r) override {
    v1::PollWorkflowTaskResponse task = ForwardingConnection::poll_workflow_task(r);
    if (!task.task_token().empty()) ++polled;
    return task;
  }
  v1::CompleteActivityResponse complete_activity_answered(const v1::CompleteActivityRequest& r) override {
    if (!r.eager_workflow_task_queue().empty()) ++asked;
    v1::CompleteActivityResponse out = inner_->complete_activity_answered(r);
    ++reported;
    if (!out.workflow_task().task_token().empty()) ++eager;
    if (out.result_held()) ++held;
    return out;
  }
  v1::StartWorkflowResponse start_workflow(const v1::StartWorkflowRequest& r) override {
    ++starts;
    return ForwardingConnection::start_workflow(r);
  }
  v1::GetHistoryResponse get_history(const v1::GetHistoryRequest& r, std::chrono::seconds timeout) override {
    if (r.close_event_only()) ++close_waits;
    return ForwardingConnection::get_history(r, timeout);
  }
  std::atomic<int> polled{0}, asked{0}, eager{0}, held{0}, reported{0}, starts{0}, close_waits{0};
};

// Loses the answer to every workflow task that came with a held activity
// result (as a server crash or a dropped connection would), and counts the
// results reported again on their own.
class LosesHeldTaskAnswers : public CountingConnection {
 public:
  using CountingConnection::CountingConnection;
  v1::CompleteActivityResponse complete_activity_answered(const v1::CompleteActivityRequest& r) override {
    v1::CompleteActivityResponse out = CountingConnection::complete_activity_answered(r);
    if (out.result_held()) {
      std::lock_guard lock(mu_);
      held_tokens_.insert(out.workflow_task().task_token());
    }
    return out;
  }
  v1::CompleteWorkflowTaskResponse complete_workflow_task(const v1::CompleteWorkflowTaskRequest& r) override {
    lose_if_held(r.task_token());
    return CountingConnection::complete_workflow_task(r);
  }
  void fail_workflow_task(const v1::FailWorkflowTaskRequest& r) override {
    lose_if_held(r.task_token());
    CountingConnection::fail_workflow_task(r);
  }
  // The first reports again meet a server that is away.
  void complete_activity(const v1::CompleteActivityRequest& r) override {
    if (++reported_again <= 2) throw RpcError(static_cast<int>(StatusCode::kUnavailable), "server away (test)");
    CountingConnection::complete_activity(r);
  }
  std::atomic<int> lost{0}, reported_again{0};

 private:
  void lose_if_held(const std::string& token) {
    std::lock_guard lock(mu_);
    if (!held_tokens_.contains(token)) return;
    ++lost;
    throw RpcError(static_cast<int>(StatusCode::kUnavailable), "lost on its way (test)");
  }
  std::mutex mu_;
  std::set<std::string> held_tokens_;
};

int64_t transitions_of(Server& server) {
  v1::GetStorageStatsResponse stats;
  EXPECT_TRUE(call(server.stub(), &Stub::GetStorageStats, v1::GetStorageStatsRequest(), &stats).ok());
  return stats.transitions();
}

std::vector<v1::EventType> event_types(Connection& connection, const std::string& workflow_id) {
  v1::GetHistoryRequest r;
  r.mutable_workflow_execution()->set_workflow_id(workflow_id);
  std::vector<v1::EventType> out;
  const v1::GetHistoryResponse history = connection.get_history(r, 10s);
  for (const auto& e : history.history().events()) out.push_back(e.event_type());
  return out;
}

TEST(EagerWorkflowTasks, TheTaskAnActivityResultWakesComesBackInItsAnswer) {
  TempDir dir;
  Server server(dir.file("eager-wt.db"));
  auto connection = std::make_shared<CountingConnection>(Connection::remote(server.address()));
  Worker worker(connection, {.task_queue = "q", .identity = "w1"});
  worker.register_workflow(hello_wf);
  worker.register_activity(greet_activity);
  worker.start();
  Client client(connection);
  EXPECT_EQ(client.execute(hello_wf, {.id = "hello-1", .task_queue = "q"}, std::string("world")), "Hello, world!");
  worker.stop();
  EXPECT_EQ(connection->asked.load(), 1);
  EXPECT_EQ(connection->eager.load(), 1) << "the second workflow task came in the activity's answer";
  EXPECT_EQ(connection->held.load(), 1) << "the result was held with it";
  EXPECT_EQ(connection->polled.load(), 1) << "only the first workflow task was polled";
  EXPECT_EQ(transitions_of(server), 3) << "the start, the first task's completion, and the result with the last task";
  const std::vector<v1::EventType> expected = {
      v1::EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,  v1::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
      v1::EVENT_TYPE_WORKFLOW_TASK_STARTED,       v1::EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
      v1::EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,     v1::EVENT_TYPE_ACTIVITY_TASK_STARTED,
      v1::EVENT_TYPE_ACTIVITY_TASK_COMPLETED,     v1::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
      v1::EVENT_TYPE_WORKFLOW_TASK_STARTED,       v1::EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
      v1::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED};
  EXPECT_EQ(event_types(*connection, "hello-1"), expected);
}

// The held result's task answer is lost: the worker reports the result
// again until the server takes it (the first two reports find it away),
// which commits the held change; the task, unanswered, times out and runs
// again from the normal queue. The result is recorded once.
TEST(EagerWorkflowTasks, AHeldResultWhoseTaskAnswerIsLostIsReportedAgainAndRecordedOnce) {
  TempDir dir;
  Server server(dir.file("lost-answer.db"), {"--max-held-start", "300ms"});
  auto connection = std::make_shared<LosesHeldTaskAnswers>(Connection::remote(server.address()));
  Worker worker(connection, {.task_queue = "q", .identity = "w1"});
  worker.register_workflow(hello_wf);
  worker.register_activity(greet_activity);
  worker.start();
  Client client(connection);
  EXPECT_EQ(
      client.execute(hello_wf, {.id = "lost", .task_queue = "q", .workflow_task_timeout = 1s}, std::string("world")),
      "Hello, world!");
  worker.stop();
  EXPECT_EQ(connection->held.load(), 1);
  EXPECT_EQ(connection->lost.load(), 2) << "the task's completion, then its failure";
  EXPECT_EQ(connection->reported_again.load(), 3);
  const std::vector<v1::EventType> history = event_types(*connection, "lost");
  EXPECT_EQ(std::count(history.begin(), history.end(), v1::EVENT_TYPE_ACTIVITY_TASK_COMPLETED), 1);
  EXPECT_EQ(std::count(history.begin(), history.end(), v1::EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT), 1);
}

TEST(EagerWorkflowTasks, NotAskedForWhenTurnedOffOrWithoutACache) {
  TempDir dir;
  Server server(dir.file("not-asked.db"));
  for (WorkerOptions options : {WorkerOptions{.task_queue = "off", .eager_workflow_tasks = false},
                                WorkerOptions{.task_queue = "uncached", .cache_size = 0}}) {
    auto connection = std::make_shared<CountingConnection>(Connection::remote(server.address()));
    Worker worker(connection, options);
    worker.register_workflow(hello_wf);
    worker.register_activity(greet_activity);
    worker.start();
    Client client(connection);
    EXPECT_EQ(client.execute(hello_wf, {.id = "hello-" + options.task_queue, .task_queue = options.task_queue},
                             std::string("world")),
              "Hello, world!");
    worker.stop();
    EXPECT_EQ(connection->asked.load(), 0) << options.task_queue;
    EXPECT_EQ(connection->polled.load(), 2) << options.task_queue;
  }
}

// A task asked for when every workflow thread is busy waits for one in the
// worker, as a polled one would in the server's sticky queue; but no more of
// them wait than the worker has threads.
TEST(EagerWorkflowTasks, NotAskedForWhenEveryThreadIsBusyAndAsManyTasksWaitForOne) {
  TempDir dir;
  Server server(dir.file("no-thread.db"));
  auto connection = std::make_shared<CountingConnection>(Connection::remote(server.address()));
  Worker worker(connection, {.task_queue = "q", .workflow_threads = 1, .activity_threads = 3});
  worker.register_workflow(patient_wf);
  worker.register_workflow(blocker_wf);
  worker.register_activity(patient_greet_activity);
  worker.register_activity(hold_activity);
  worker.start();
  Client client(connection);
  // The patients' activities wait until the blocker's task holds the thread.
  auto first = client.start(patient_wf, {.id = "patient-1", .task_queue = "q"}, std::string("one"));
  auto second = client.start(patient_wf, {.id = "patient-2", .task_queue = "q"}, std::string("two"));
  auto blocker_run = client.start(blocker_wf, {.id = "blocker", .task_queue = "q"});
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (connection->reported < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(connection->reported.load(), 2) << "both patients' activities reported their results";
  EXPECT_EQ(connection->asked.load(), 1) << "one task may wait for the busy thread, not two";
  let_go = true;
  EXPECT_EQ(first.result(30s), "Hello, one!");
  EXPECT_EQ(second.result(30s), "Hello, two!");
  EXPECT_EQ(blocker_run.result(30s), "held");
  worker.stop();
}

// With the worker on the client's connection, the start's answer brings the
// first task and the activity's the second: the workflow runs without a
// single workflow-task poll.
TEST(EagerStart, TheStartsAnswerBringsTheFirstTaskToTheWorkerOnTheSameConnection) {
  TempDir dir;
  Server server(dir.file("eager-start.db"));
  auto connection = std::make_shared<CountingConnection>(Connection::remote(server.address()));
  Worker worker(connection, {.task_queue = "q", .identity = "w1"});
  worker.register_workflow(hello_wf);
  worker.register_activity(greet_activity);
  worker.start();
  Client client(connection);
  EXPECT_EQ(client.execute(hello_wf, {.id = "eager", .task_queue = "q", .eager_start = true}, std::string("world")),
            "Hello, world!");
  EXPECT_EQ(connection->polled.load(), 0) << "neither workflow task was polled";
  EXPECT_EQ(connection->eager.load(), 1);

  // Without the option, or from a connection no worker polls through, the
  // first task is polled.
  EXPECT_EQ(client.execute(hello_wf, {.id = "plain", .task_queue = "q"}, std::string("you")), "Hello, you!");
  EXPECT_EQ(connection->polled.load(), 1);
  Client elsewhere(Connection::remote(server.address()));
  EXPECT_EQ(elsewhere.execute(hello_wf, {.id = "other", .task_queue = "q", .eager_start = true}, std::string("all")),
            "Hello, all!");
  EXPECT_EQ(connection->polled.load(), 2);
  worker.stop();
  v1::GetHistoryRequest r;
  r.mutable_workflow_execution()->set_workflow_id("eager");
  const v1::History history = connection->get_history(r, 10s).history();
  ASSERT_GE(history.events_size(), 3);
  EXPECT_EQ(history.events(2).workflow_task_started().identity(), "w1");
}

TEST(ClientExecute, OneCallAcrossContinueAsNew) {
  TempDir dir;
  Server server(dir.file("execute.db"));
  auto worker_connection = Connection::remote(server.address());
  Worker worker(worker_connection, {.task_queue = "q"});
  worker.register_workflow(hello_wf);
  worker.register_workflow(countdown_wf);
  worker.register_activity(greet_activity);
  worker.start();
  auto connection = std::make_shared<CountingConnection>(Connection::remote(server.address()));
  Client client(connection);
  EXPECT_EQ(client.execute(hello_wf, {.id = "hello", .task_queue = "q"}, std::string("world")), "Hello, world!");
  EXPECT_EQ(connection->starts.load(), 1);
  EXPECT_EQ(connection->close_waits.load(), 0) << "the start brought the result";
  EXPECT_EQ(client.execute(countdown_wf, {.id = "countdown", .task_queue = "q"}, int64_t{3}), "lift-off");
  worker.stop();
  EXPECT_EQ(connection->starts.load(), 2);
  EXPECT_EQ(connection->close_waits.load(), 0) << "the start's wait followed the four runs on the server";
}

// A start retried with the request id of one that started the run waits for
// that run's result: while it runs, and after it closed.
TEST(ClientExecute, ARetryWithTheSameRequestIdGetsTheSameResult) {
  TempDir dir;
  Server server(dir.file("execute-retry.db"));
  auto worker_connection = Connection::remote(server.address());
  Worker worker(worker_connection, {.task_queue = "q"});
  worker.register_workflow(resting_wf);
  worker.start();
  auto connection = std::make_shared<CountingConnection>(Connection::remote(server.address()));
  Client client(connection);
  const StartOptions options{.id = "resting", .task_queue = "q", .request_id = "start-1"};
  auto first = client.start(resting_wf, options);
  ASSERT_TRUE(first.started());
  EXPECT_EQ(client.execute(resting_wf, options), "rested") << "found running, waited for";
  EXPECT_EQ(client.execute(resting_wf, options), "rested") << "found closed";
  worker.stop();
  EXPECT_EQ(connection->starts.load(), 3);
  EXPECT_EQ(connection->close_waits.load(), 0);
  v1::GetHistoryRequest r;
  r.mutable_workflow_execution()->set_workflow_id("resting");
  EXPECT_EQ(connection->get_history(r, 10s).history().events(0).event_type(),
            v1::EVENT_TYPE_WORKFLOW_EXECUTION_STARTED);
  v1::ListWorkflowsRequest list;
  EXPECT_EQ(connection->list_workflows(list).executions_size(), 1) << "one run, started once";
}

// A wait that ends before the run closes answers the start without the
// close event; the run goes on and the caller waits with GetHistory (as
// execute() then does).
TEST(ClientExecute, AStartWhoseWaitEndsFirstAnswersWithoutTheResult) {
  TempDir dir;
  Server server(dir.file("execute-wait-ends.db"));
  auto worker_connection = Connection::remote(server.address());
  Worker worker(worker_connection, {.task_queue = "q"});
  worker.register_workflow(resting_wf);
  worker.start();
  auto connection = Connection::remote(server.address());
  v1::StartWorkflowRequest r;
  r.set_workflow_id("short-wait");
  r.mutable_workflow_type()->set_name(resting_wf.name);
  r.mutable_task_queue()->set_name("q");
  r.set_request_id("short-wait-1");
  r.set_wait_for_result(true);
  r.mutable_wait_timeout()->set_nanos(200'000'000);
  const auto sent = std::chrono::steady_clock::now();
  const v1::StartWorkflowResponse started = connection->start_workflow(r);
  EXPECT_GE(std::chrono::steady_clock::now() - sent, 200ms) << "the start waited";
  EXPECT_TRUE(started.started());
  EXPECT_FALSE(started.has_close_event());
  const v1::Payloads result = wait_for_workflow_result(*connection, "short-wait", started.run_id(), 10s);
  ASSERT_EQ(result.payloads_size(), 1);
  worker.stop();
}

}  // namespace
}  // namespace reprise
