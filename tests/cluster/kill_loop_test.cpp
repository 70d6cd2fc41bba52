// Three nodes on one PostgreSQL under a steady load from an SDK client and
// two SDK workers, all given the three addresses; one node at a time is
// killed (kill -9) at a random moment and restarted on its port, again and
// again. Every start the client saw acknowledged completes, each event of
// each history once, and the dead node's shards move within the lease
// (each takeover is measured and printed).
//
// The suite kills twice; REPRISE_CLUSTER_KILLS=N kills N times (the long
// run, docs/cluster.md: 10). REPRISE_CLUSTER_KILL_SEED replays a run's
// choices of moments and nodes.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>
#include <random>
#include <thread>

#include "../test_seed.hpp"
#include "cluster_harness.hpp"
#include "reprise/activity.hpp"
#include "reprise/client.hpp"
#include "reprise/history_file.hpp"
#include "reprise/worker.hpp"
#include "reprise/workflow.hpp"

namespace reprise {
namespace {

using namespace cluster_testing;
using namespace std::chrono_literals;

// A node with a fixed port and name, so it comes back as itself.
struct KillLoopNode {
  std::string name;
  int port = 0;
  std::unique_ptr<Server> server;
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }
  void start(const std::string& url) { server = cluster_node(url, name, "1s", {"--listen", address()}); }
};

int kills_asked() {
  const char* n = std::getenv("REPRISE_CLUSTER_KILLS");
  return n != nullptr && *n != '\0' ? std::atoi(n) : 2;
}

TEST(ClusterKillLoop, KillNineOfOneOfThreeNodesAgainAndAgainLosesNoAcknowledgedStart) {
  REPRISE_POSTGRES_DATABASE(url);
  std::mt19937_64 random(test_seed("REPRISE_CLUSTER_KILL_SEED"));
  std::vector<KillLoopNode> nodes(3);
  for (size_t i = 0; i < nodes.size(); ++i) {
    nodes[i].name = std::string(1, static_cast<char>('a' + i));
    nodes[i].port = unused_loopback_port();
    nodes[i].start(url);
  }
  ClusterDb db(url);
  auto every_node_serves = [&] {
    return std::all_of(nodes.begin(), nodes.end(), [&](const KillLoopNode& n) { return db.shards_of(n.name) > 0; });
  };
  ASSERT_TRUE(wait_for(every_node_serves, 15s));
  const std::string a = nodes[0].address(), b = nodes[1].address(), c = nodes[2].address();
  auto client_connection = Connection::remote(a + "," + b + "," + c);
  std::vector<std::unique_ptr<Worker>> workers;
  for (const std::string& list : {b + "," + c + "," + a, c + "," + a + "," + b}) {
    workers.push_back(std::make_unique<Worker>(
        Connection::remote(list),
        WorkerOptions{.task_queue = "kill-loop", .workflow_threads = 4, .activity_threads = 4}));
    workers.back()->register_workflow(cluster_hello_wf);
    workers.back()->register_activity(cluster_greet_activity);
    workers.back()->start();
  }

  Client client(client_connection);
  std::mutex mu;
  std::vector<std::string> acknowledged, refused;
  std::atomic<bool> stop{false};
  std::thread starter([&] {
    for (int i = 0; !stop; ++i) {
      const std::string id = "kill-loop-" + std::to_string(i);
      try {
        client.start(cluster_hello_wf, {.id = id, .task_queue = "kill-loop", .workflow_task_timeout = 2s},
                     std::string(id));
        std::lock_guard lock(mu);
        acknowledged.push_back(id);
      } catch (const RpcError& e) {
        std::lock_guard lock(mu);
        refused.push_back(id + ": " + e.what());
      }
      std::this_thread::sleep_for(50ms);
    }
  });

  const int kills = kills_asked();
  std::vector<int64_t> takeover_ms;
  for (int k = 0; k < kills; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500 + random() % 2000));
    KillLoopNode& victim = nodes[random() % nodes.size()];
    victim.server->kill9();
    const auto killed = TestClock::now();
    // Moved: every shard held, unexpired, by a live node.
    const auto moved = wait_for(
        [&] {
          return db.count("SELECT count(*) FROM shards WHERE expires_at > now() AND owner <> $1",
                          PgParams().add_text(victim.name)) == kShards;
        },
        15s);
    ASSERT_TRUE(moved) << "kill " << k + 1 << " of " << victim.name << ": its shards did not move";
    takeover_ms.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(TestClock::now() - killed).count());
    std::cout << "kill " << k + 1 << ": node " << victim.name << ", its shards moved " << takeover_ms.back()
              << " ms after kill -9 (lease 1s)\n";
    victim.start(url);
    ASSERT_TRUE(wait_for(every_node_serves, 15s)) << victim.name << " took no shards back";
  }
  // A little past the last kill, and on until more than 10 starts have been
  // acknowledged in all, however slow the machine: the load is counted,
  // not the time it had.
  std::this_thread::sleep_for(500ms);
  const bool loaded = wait_for(
                          [&] {
                            std::lock_guard lock(mu);
                            return acknowledged.size() > 10;
                          },
                          60s)
                          .has_value();
  stop = true;
  starter.join();
  EXPECT_TRUE(refused.empty()) << refused.size() << " starts refused, the first: " << refused[0];
  ASSERT_TRUE(loaded) << "only " << acknowledged.size() << " starts were acknowledged within a minute of the last kill";
  const auto waited = TestClock::now();
  for (const std::string& id : acknowledged) {
    try {
      EXPECT_EQ(client.handle(cluster_hello_wf, id).result(60s), "hello " + id);
    } catch (const std::exception& e) {
      ADD_FAILURE() << id << ": " << e.what();
    }
  }
  std::cout << acknowledged.size() << " acknowledged starts, all completed "
            << std::chrono::duration_cast<std::chrono::milliseconds>(TestClock::now() - waited).count()
            << " ms after the load stopped\n";
  for (auto& w : workers) w->stop();
  for (const std::string& id : acknowledged) expect_whole_hello_history(fetch_history(*client_connection, id), id);
  std::sort(takeover_ms.begin(), takeover_ms.end());
  if (!takeover_ms.empty()) {
    std::cout << "takeover after kill -9, " << takeover_ms.size() << " kills (lease 1s): min " << takeover_ms.front()
              << " ms, median " << takeover_ms[takeover_ms.size() / 2] << " ms, max " << takeover_ms.back() << " ms\n";
  }
}

}  // namespace
}  // namespace reprise
