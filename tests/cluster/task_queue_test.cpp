// Task queues owned by one node each (docs/cluster.md, "Task queues"):
// three real nodes on the test's PostgreSQL. A poll reaches its queue's
// owner with one relayed poll, a task of any shard reaches a worker polling
// any node, and the owner killed (-9) with tasks pending loses none of them.
// The test computes a queue's owner as the nodes do (rendezvous.hpp) and
// counts the calls each node answered on its /metrics.

#include <array>
#include <iostream>
#include <map>
#include <set>

#include "../store/http_exchange.hpp"
#include "cluster_harness.hpp"
#include "engine/store/records.hpp"
#include "engine/store/rendezvous.hpp"
#include "history/status.hpp"
#include "reprise/activity.hpp"
#include "reprise/client.hpp"
#include "reprise/worker.hpp"
#include "reprise/workflow.hpp"

namespace reprise {
namespace {

using namespace cluster_testing;
using namespace std::chrono_literals;

const std::vector<std::string> kQueueTestNodes{"a", "b", "c"};

// The node that owns workflow queue `queue` of namespace "default" while
// a, b and c are live.
std::string queue_owner_of(const std::string& queue, engine::TaskKind kind = engine::TaskKind::kWorkflowTask) {
  return engine::rendezvous_owner(engine::task_queue_key("default", static_cast<int>(kind), queue), kQueueTestNodes);
}

// How many calls of `operation` the node answered (0 when none yet).
int calls_answered(Server& node, const std::string& operation) {
  const std::string page = testing_http::scrape_metrics(node.metrics_address());
  const std::string series = "\nservice_requests_total{operation=\"" + operation + "\"} ";
  const size_t at = page.find(series);
  return at == std::string::npos ? 0 : std::atoi(page.c_str() + at + series.size());
}

// The value of the unlabeled gauge `name` on the node (-1 when absent).
int gauge_of(Server& node, const std::string& name) {
  const std::string page = testing_http::scrape_metrics(node.metrics_address());
  const std::string series = "\n" + name + " ";
  const size_t at = page.find(series);
  return at == std::string::npos ? -1 : std::atoi(page.c_str() + at + series.size());
}

struct QueueTestCluster {
  std::map<std::string, std::unique_ptr<Server>> nodes;
  std::unique_ptr<ClusterDb> db;
  const std::string url;
  const std::string lease;

  explicit QueueTestCluster(std::string database, std::string shard_lease = "1s")
      : url(std::move(database)), lease(std::move(shard_lease)) {
    for (const std::string& id : kQueueTestNodes) start(id);
    db = std::make_unique<ClusterDb>(url);
    // Each node has its share once every node has seen the others (a share
    // is let go only to a member seen alive).
    EXPECT_TRUE(wait_for(
        [&] {
          int64_t held = 0;
          for (const std::string& id : kQueueTestNodes) {
            const int64_t mine = db->shards_of(id);
            if (mine == 0) return false;
            held += mine;
          }
          return held == kShards;
        },
        15s))
        << "the shards were not spread over the three nodes";
    // And each node sees the three live: until then a node may take itself
    // or another for a queue's owner (a poll served where it arrives, a
    // task handed to a node that does not own its queue).
    for (const std::string& id : kQueueTestNodes) {
      EXPECT_TRUE(wait_for([&] { return gauge_of(*nodes[id], "cluster_live_nodes") == 3; }, 10s))
          << id << " sees " << gauge_of(*nodes[id], "cluster_live_nodes") << " live nodes";
    }
  }
  // Waits until no shard changes hands for two leases: each change makes
  // every node hand its pending tasks to their owners again, and a copy that
  // reaches the owner while the first is being started is started once more
  // (answered stale).
  void wait_until_shards_settle() {
    auto holders = [&] {  // every acquisition raises a range_id
      return db->count("SELECT sum(range_id) + 1000000 * count(*) FILTER (WHERE expires_at < now()) FROM shards");
    };
    int64_t before = holders();
    EXPECT_TRUE(wait_for(
        [&] {
          std::this_thread::sleep_for(2s);
          const int64_t now = holders();
          const bool settled = now == before;
          before = now;
          return settled;
        },
        20s))
        << "the shards kept changing hands";
  }
  // Starts node `id`, or starts it again under its name.
  void start(const std::string& id) { nodes[id] = cluster_node(url, id, lease, {"--metrics-listen", "127.0.0.1:0"}); }
  Server& operator[](const std::string& id) { return *nodes.at(id); }
  // A workflow id whose shard `node` serves.
  std::string id_on(const std::string& node, const std::string& prefix) {
    for (int i = 0; i < 1000; ++i) {
      std::string id = prefix + "-" + std::to_string(i);
      if (db->owner_of(id) == node) return id;
    }
    ADD_FAILURE() << "no id of " << prefix << " on " << node;
    return "";
  }
};

v1::StartWorkflowRequest start_on_queue(const std::string& id, const std::string& queue) {
  v1::StartWorkflowRequest r = start_request(id);
  r.mutable_task_queue()->set_name(queue);
  return r;
}

// One poll of `queue` at `stub`, answered within the servers' poll timeout.
v1::PollWorkflowTaskResponse poll_queue(Stub& stub, const std::string& queue, grpc::Status* status = nullptr) {
  v1::PollWorkflowTaskRequest r;
  r.mutable_task_queue()->set_name(queue);
  v1::PollWorkflowTaskResponse out;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 5s);
  grpc::Status s = stub.PollWorkflowTask(&context, r, &out);
  if (status != nullptr) *status = s;
  return out;
}

v1::PollActivityTaskResponse poll_activity_queue(Stub& stub, const std::string& queue) {
  v1::PollActivityTaskRequest r;
  r.mutable_task_queue()->set_name(queue);
  v1::PollActivityTaskResponse out;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 5s);
  (void)stub.PollActivityTask(&context, r, &out);
  return out;
}

// Polls `stub` until a workflow task comes, for up to `limit`.
v1::PollWorkflowTaskResponse next_task_of(Stub& stub, const std::string& queue, std::chrono::milliseconds limit = 10s) {
  const auto until = TestClock::now() + limit;
  while (TestClock::now() < until) {
    v1::PollWorkflowTaskResponse task = poll_queue(stub, queue);
    if (!task.task_token().empty()) return task;
  }
  return {};
}

// Calls one RPC as an SDK worker does: a call refused for now (UNAVAILABLE
// with the reprise-retryable trailer: a shard moving between nodes) is sent
// again after a pause, for up to 10 s.
template <typename Req, typename Resp>
grpc::Status call_as_a_worker(Stub& stub, grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                              const Req& request, Resp* response) {
  const auto until = TestClock::now() + 10s;
  while (true) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 10s);
    const grpc::Status s = (stub.*method)(&context, request, response);
    const bool refused_for_now = s.error_code() == grpc::StatusCode::UNAVAILABLE &&
                                 context.GetServerTrailingMetadata().count(kRetryableTrailer) > 0;
    if (!refused_for_now || TestClock::now() >= until) return s;
    std::this_thread::sleep_for(50ms);
  }
}

grpc::Status complete_as_a_worker(Stub& stub, const std::string& token, const std::vector<v1::Command>& commands) {
  v1::CompleteWorkflowTaskRequest request;
  request.set_task_token(token);
  for (const v1::Command& c : commands) *request.add_commands() = c;
  v1::CompleteWorkflowTaskResponse ignored;
  return call_as_a_worker(stub, &Stub::CompleteWorkflowTask, request, &ignored);
}

TEST(ClusterTaskQueues, APollOnANodeThatDoesNotOwnItsQueueIsServedByTheOwnerWithOneRelayedPoll) {
  REPRISE_POSTGRES_DATABASE(url);
  QueueTestCluster cluster(url);
  cluster.wait_until_shards_settle();  // the StartTask count below is exact
  const std::string queue = "one-relayed-poll";
  const std::string owner = queue_owner_of(queue);
  // The worker polls `polled`; the workflow's shard is on `third`.
  std::string polled, third;
  for (const std::string& id : kQueueTestNodes) {
    if (id == owner) continue;
    (polled.empty() ? polled : third) = id;
  }
  const std::string id = cluster.id_on(third, "relayed");
  v1::StartWorkflowResponse started;
  ASSERT_TRUE(call(cluster[third].stub(), &Stub::StartWorkflow, start_on_queue(id, queue), &started).ok());

  v1::PollWorkflowTaskResponse task = next_task_of(cluster[polled].stub(), queue);
  ASSERT_FALSE(task.task_token().empty()) << "the task never reached the worker polling " << polled;
  EXPECT_EQ(task.workflow_execution().workflow_id(), id);
  ASSERT_TRUE(complete(cluster[polled].stub(), task.task_token(), {finish("done")}).ok());
  // And a poll that finds nothing: the owner answers it empty.
  grpc::Status empty_status;
  EXPECT_TRUE(poll_queue(cluster[polled].stub(), queue, &empty_status).task_token().empty());
  EXPECT_TRUE(empty_status.ok()) << empty_status.error_message();

  const int at_polled = calls_answered(cluster[polled], "PollWorkflowTask");
  const int at_owner = calls_answered(cluster[owner], "PollWorkflowTask");
  const int at_third = calls_answered(cluster[third], "PollWorkflowTask");
  std::cout << "polls answered: " << polled << " (polled) " << at_polled << ", " << owner << " (owner) " << at_owner
            << ", " << third << " (the workflow's) " << at_third << "\n";
  EXPECT_EQ(at_owner, at_polled) << "each poll relayed once, to the owner";
  EXPECT_EQ(at_third, 0) << "no poll reaches a node that does not own the queue";
  EXPECT_EQ(calls_answered(cluster[third], "StartTask"), 1) << "the owner asked the workflow's node to start it";
  EXPECT_EQ(count_events(history_of(cluster[polled].stub(), id), v1::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED), 1);
}

// For each node serving the workflow and each node polled: its workflow
// task, its activity task (polled at the next node) and its last workflow
// task (at the one after) reach the worker, once. The calls are made as a
// worker makes them (a refusal for now sent again), and the leases are
// long enough that a node stalled by a loaded machine keeps its shards: a
// shard moved between a task's start and its completion loses the start
// held in memory, and the task is handed out again (at least once).
TEST(ClusterTaskQueues, ATaskOfAnyShardReachesAWorkerPollingAnyNode) {
  REPRISE_POSTGRES_DATABASE(url);
  QueueTestCluster cluster(url, "3s");
  const std::string queue = "any-to-any";
  for (size_t s = 0; s < kQueueTestNodes.size(); ++s) {
    for (size_t p = 0; p < kQueueTestNodes.size(); ++p) {
      const std::string& serving = kQueueTestNodes[s];
      Stub& first = cluster[kQueueTestNodes[p]].stub();
      Stub& second = cluster[kQueueTestNodes[(p + 1) % 3]].stub();
      Stub& third = cluster[kQueueTestNodes[(p + 2) % 3]].stub();
      const std::string id = cluster.id_on(serving, "any-" + serving + "-" + kQueueTestNodes[p]);
      SCOPED_TRACE(id + " on " + serving + ", polled at " + kQueueTestNodes[p]);
      v1::StartWorkflowResponse started;
      const grpc::Status start =
          call_as_a_worker(cluster[serving].stub(), &Stub::StartWorkflow, start_on_queue(id, queue), &started);
      ASSERT_TRUE(start.ok()) << start.error_message();

      v1::PollWorkflowTaskResponse task = next_task_of(first, queue);
      ASSERT_EQ(task.workflow_execution().workflow_id(), id);
      v1::Command activity = schedule("1");
      activity.mutable_schedule_activity_task()->mutable_task_queue()->set_name(queue);
      const grpc::Status scheduled = complete_as_a_worker(first, task.task_token(), {activity});
      ASSERT_TRUE(scheduled.ok()) << scheduled.error_message();

      v1::PollActivityTaskResponse work;
      ASSERT_TRUE(wait_for([&] { return !(work = poll_activity_queue(second, queue)).task_token().empty(); }, 10s));
      ASSERT_EQ(work.workflow_execution().workflow_id(), id);
      v1::CompleteActivityRequest done;
      done.set_task_token(work.task_token());
      v1::CompleteActivityResponse ignored;
      const grpc::Status ran = call_as_a_worker(second, &Stub::CompleteActivity, done, &ignored);
      ASSERT_TRUE(ran.ok()) << ran.error_message();

      task = next_task_of(third, queue);
      ASSERT_EQ(task.workflow_execution().workflow_id(), id);
      const grpc::Status finished = complete_as_a_worker(third, task.task_token(), {finish("done")});
      ASSERT_TRUE(finished.ok()) << finished.error_message();
      v1::GetHistoryResponse history = history_of(first, id);
      EXPECT_EQ(count_events(history, v1::EVENT_TYPE_WORKFLOW_TASK_STARTED), 2);
      EXPECT_EQ(count_events(history, v1::EVENT_TYPE_ACTIVITY_TASK_STARTED), 1);
      EXPECT_EQ(count_events(history, v1::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED), 1);
    }
  }
}

// Workflows on every node's shards, their first tasks handed to the
// queue's owner, then the owner killed (-9) before any worker polled: a
// worker polling the survivors gets every one of them, each once (none was
// started, so none is owed a second hand-out), through the new owner.
TEST(ClusterTaskQueues, TheQueueOwnerKilledWithTasksPendingLosesNoneOfThem) {
  REPRISE_POSTGRES_DATABASE(url);
  QueueTestCluster cluster(url);
  const std::string queue = "owner-killed";
  const std::string owner = queue_owner_of(queue);
  std::vector<std::string> survivors;
  for (const std::string& id : kQueueTestNodes) {
    if (id != owner) survivors.push_back(id);
  }
  constexpr int kPerNode = 4;
  std::set<std::string> ids;
  int handed_to_owner = 0;  // tasks the other nodes handed to the owner
  for (const std::string& node : kQueueTestNodes) {
    for (int i = 0; i < kPerNode; ++i) {
      const std::string id = cluster.id_on(node, "pending-" + node + "-" + std::to_string(i));
      v1::StartWorkflowResponse started;
      ASSERT_TRUE(call(cluster[node].stub(), &Stub::StartWorkflow, start_on_queue(id, queue), &started).ok());
      ids.insert(id);
      handed_to_owner += node == owner ? 0 : 1;
    }
  }
  ASSERT_EQ(ids.size(), size_t{3 * kPerNode});
  ASSERT_TRUE(wait_for([&] { return calls_answered(cluster[owner], "AddTasks") >= handed_to_owner; }, 10s))
      << "the owner got " << calls_answered(cluster[owner], "AddTasks") << " hand-overs of " << handed_to_owner;
  cluster[owner].kill9();
  const auto killed = TestClock::now();

  std::map<std::string, int> handed_out;
  const auto until = killed + 20s;
  for (size_t turn = 0; TestClock::now() < until && handed_out.size() < ids.size(); ++turn) {
    Stub& stub = cluster[survivors[turn % survivors.size()]].stub();
    grpc::Status status;
    v1::PollWorkflowTaskResponse task = poll_queue(stub, queue, &status);
    if (!status.ok()) std::this_thread::sleep_for(100ms);  // relayed to the dead owner, before the others know
    if (task.task_token().empty()) continue;
    const std::string& id = task.workflow_execution().workflow_id();
    ++handed_out[id];
    const grpc::Status completed = complete_as_a_worker(stub, task.task_token(), {finish("done")});
    EXPECT_TRUE(completed.ok()) << id << " completed at " << survivors[turn % survivors.size()]
                                << ", its shard held by " << cluster.db->owner_of(id) << ": " << completed.error_code()
                                << " " << completed.error_message();
  }
  std::cout << handed_out.size() << " of " << ids.size() << " pending tasks handed out, the last "
            << std::chrono::duration_cast<std::chrono::milliseconds>(TestClock::now() - killed).count()
            << " ms after the owner's kill -9 (lease 1s)\n";
  for (const std::string& id : ids) {
    EXPECT_EQ(handed_out[id], 1) << id << ": handed out once";
    grpc::Status s;
    EXPECT_TRUE(wait_for(
        [&] {
          return describe(cluster[survivors[0]].stub(), id, &s).info().status() ==
                 v1::WORKFLOW_EXECUTION_STATUS_COMPLETED;
        },
        10s))
        << id;
  }
}

// A poll relayed to its queue's owner while the owner is down (killed, and
// the polled node has not yet seen it go) fails UNAVAILABLE naming the
// owner and marked retryable (the reprise-retryable trailer), as a
// forwarded call does: the polled node is up, and the call may be sent
// again.
TEST(ClusterTaskQueues, APollRelayedToAnOwnerThatIsDownFailsUnavailableMarkedRetryable) {
  REPRISE_POSTGRES_DATABASE(url);
  QueueTestCluster cluster(url);
  const std::string queue = "owner-down";
  const std::string owner = queue_owner_of(queue);
  const std::string polled = owner == "a" ? "b" : "a";
  cluster[owner].kill9();
  // The polled node sees the owner gone a lease (1 s) after its last
  // heartbeat at the latest: until then its polls go there.
  v1::PollWorkflowTaskRequest request;
  request.mutable_task_queue()->set_name(queue);
  v1::PollWorkflowTaskResponse ignored;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 5s);
  const grpc::Status s = cluster[polled].stub().PollWorkflowTask(&context, request, &ignored);
  ASSERT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_NE(s.error_message().find("forwarded to the node at"), std::string::npos) << s.error_message();
  const auto& trailers = context.GetServerTrailingMetadata();
  auto retryable = trailers.find(kRetryableTrailer);
  ASSERT_NE(retryable, trailers.end()) << "no " << kRetryableTrailer << " trailer";
  EXPECT_EQ(std::string(retryable->second.data(), retryable->second.size()), "1");
}

// A node restarted within a lease (a live member all along) lost the copies
// it held as a queue's owner: the other nodes hand it the tasks of its
// queues again, and only those: a queue whose owner did not restart gets
// none of its tasks again (each would be matched once more, and its start
// answered stale).
TEST(ClusterTaskQueues, ANodeRestartedWithinALeaseIsHandedItsQueuesTasksAgainAndNoOthers) {
  REPRISE_POSTGRES_DATABASE(url);
  // A lease long enough for the restart to fit in it on a loaded machine.
  QueueTestCluster cluster(url, "3s");
  // `restarted` owns one queue, `kept` the other; the tasks are on the
  // third node's shards.
  const std::string restarted = "a", kept = "b", third = "c";
  std::string restarted_queue, kept_queue;
  for (int i = 0; restarted_queue.empty() || kept_queue.empty(); ++i) {
    const std::string queue = "restart-" + std::to_string(i);
    const std::string owner = queue_owner_of(queue);
    if (owner == restarted && restarted_queue.empty()) restarted_queue = queue;
    if (owner == kept && kept_queue.empty()) kept_queue = queue;
  }
  const std::string on_restarted = cluster.id_on(third, "for-restarted");
  const std::string on_kept = cluster.id_on(third, "for-kept");
  v1::StartWorkflowResponse started;
  ASSERT_TRUE(
      call(cluster[third].stub(), &Stub::StartWorkflow, start_on_queue(on_restarted, restarted_queue), &started).ok());
  ASSERT_TRUE(call(cluster[third].stub(), &Stub::StartWorkflow, start_on_queue(on_kept, kept_queue), &started).ok());
  ASSERT_TRUE(wait_for(
      [&] {
        return calls_answered(cluster[restarted], "AddTasks") >= 1 && calls_answered(cluster[kept], "AddTasks") >= 1;
      },
      10s))
      << "the tasks were not handed to their queues' owners";
  const int kept_added = calls_answered(cluster[kept], "AddTasks");

  cluster[restarted].kill9();
  cluster.start(restarted);
  v1::PollWorkflowTaskResponse task = next_task_of(cluster[restarted].stub(), restarted_queue, 15s);
  EXPECT_EQ(task.workflow_execution().workflow_id(), on_restarted) << "its queue's task was not handed to it again";
  // The other nodes' rounds (a quarter lease each) have seen it take its
  // shards back by now; two more, for a hand-over they made to arrive.
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(calls_answered(cluster[kept], "AddTasks"), kept_added)
      << "tasks of a queue whose owner did not restart were handed to it again";
  EXPECT_EQ(next_task_of(cluster[kept].stub(), kept_queue).workflow_execution().workflow_id(), on_kept);
}

// The workflow tasks of `queue` a node's approximate_backlog_count reports.
int backlog_of(Server& node, const std::string& queue) {
  const std::string page = testing_http::scrape_metrics(node.metrics_address());
  const std::string series = "\napproximate_backlog_count{task_queue=\"" + queue + "\",task_type=\"workflow\"} ";
  const size_t at = page.find(series);
  return at == std::string::npos ? 0 : std::atoi(page.c_str() + at + series.size());
}

// Tasks pending on every node's shards, handed to their queue's owner: the
// nodes' backlog gauges add up to the tasks pending, each counted once (on
// the node that serves its workflow), not again as the owner's copy.
TEST(ClusterTaskQueues, TheNodesBacklogGaugesAddUpToThePendingTasksEachCountedOnce) {
  REPRISE_POSTGRES_DATABASE(url);
  QueueTestCluster cluster(url);
  const std::string queue = "backlog-counted-once";
  const std::string owner = queue_owner_of(queue);
  constexpr int kPerNode = 3;
  int handed_to_owner = 0;
  for (const std::string& node : kQueueTestNodes) {
    for (int i = 0; i < kPerNode; ++i) {
      const std::string id = cluster.id_on(node, "backlog-" + node + "-" + std::to_string(i));
      v1::StartWorkflowResponse started;
      ASSERT_TRUE(call(cluster[node].stub(), &Stub::StartWorkflow, start_on_queue(id, queue), &started).ok());
      handed_to_owner += node == owner ? 0 : 1;
    }
  }
  ASSERT_TRUE(wait_for([&] { return calls_answered(cluster[owner], "AddTasks") >= handed_to_owner; }, 10s))
      << "the owner got " << calls_answered(cluster[owner], "AddTasks") << " hand-overs of " << handed_to_owner;
  int sum = 0;
  for (const std::string& node : kQueueTestNodes) {
    const int here = backlog_of(cluster[node], queue);
    EXPECT_EQ(here, kPerNode) << node << ": the tasks of its own shards";
    sum += here;
  }
  EXPECT_EQ(sum, 3 * kPerNode);
}

// Not a check: what a steady load costs in polls and how fast it runs, for
// comparing designs (docs/cluster.md, "Task queues"). Three nodes, an SDK
// worker on each, clients starting hello workflows (one activity) through
// all three; prints workflows/s and the polls every node answered per task
// (the workers' and the relayed ones). The suite runs 30 workflows;
// REPRISE_CLUSTER_QUEUE_MEASURE=N runs N; REPRISE_SERVER may name an older
// server to compare.
TEST(ClusterTaskQueues, MeasurePollsPerTaskAndThroughput) {
  const char* asked = std::getenv("REPRISE_CLUSTER_QUEUE_MEASURE");
  const int workflows = asked != nullptr && std::atoi(asked) > 0 ? std::atoi(asked) : 30;
  REPRISE_POSTGRES_DATABASE(url);
  QueueTestCluster cluster(url);
  std::vector<std::unique_ptr<Worker>> workers;
  for (const std::string& id : kQueueTestNodes) {
    workers.push_back(
        std::make_unique<Worker>(Connection::remote(cluster[id].address()),
                                 WorkerOptions{.task_queue = "measure", .workflow_threads = 4, .activity_threads = 4}));
    workers.back()->register_workflow(cluster_hello_wf);
    workers.back()->register_activity(cluster_greet_activity);
    workers.back()->start();
  }
  auto polls = [&] {
    int n = 0;
    for (const std::string& id : kQueueTestNodes) {
      n += calls_answered(cluster[id], "PollWorkflowTask") + calls_answered(cluster[id], "PollActivityTask");
    }
    return n;
  };
  auto internal_calls = [&] {
    int n = 0;
    for (const std::string& id : kQueueTestNodes) {
      n += calls_answered(cluster[id], "AddTasks") + calls_answered(cluster[id], "StartTask");
    }
    return n;
  };
  const int polls_before = polls();
  const int internal_before = internal_calls();
  const auto started = TestClock::now();
  constexpr int kClients = 3;
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      Client client(Connection::remote(cluster[kQueueTestNodes[c]].address()));
      std::vector<std::string> mine;
      for (int i = c; i < workflows; i += kClients) {
        const std::string id = "measure-" + std::to_string(i);
        client.start(cluster_hello_wf, {.id = id, .task_queue = "measure"}, std::string(id));
        mine.push_back(id);
      }
      for (const std::string& id : mine) EXPECT_EQ(client.handle(cluster_hello_wf, id).result(60s), "hello " + id);
    });
  }
  for (auto& t : clients) t.join();
  const double seconds = std::chrono::duration<double>(TestClock::now() - started).count();
  const int poll_calls = polls() - polls_before;
  const int internal = internal_calls() - internal_before;
  for (auto& w : workers) w->stop();
  const int tasks = 3 * workflows;  // two workflow tasks and an activity task each, eager ones included
  std::cout << workflows << " workflows in " << seconds << " s: " << workflows / seconds << " workflows/s; "
            << poll_calls << " polls answered (" << static_cast<double>(poll_calls) / tasks << " per task), "
            << internal << " AddTasks/StartTask calls (" << static_cast<double>(internal) / tasks << " per task)\n";
}

}  // namespace
}  // namespace reprise
