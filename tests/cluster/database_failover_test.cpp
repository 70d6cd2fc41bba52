// The database under a cluster goes away and comes back: PostgreSQL crashes
// and restarts on its data, its primary is lost and a synchronous standby
// promoted in its place (docs/cluster.md, Replicated PostgreSQL), or the
// connection drops at a COMMIT (docs/engine.md, Commits in doubt). Each test
// runs a PostgreSQL of its own, so the crash touches no other test.
#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>
#include <thread>

#include "cluster_harness.hpp"
#include "commit_answer_proxy.hpp"
#include "reprise/activity.hpp"
#include "reprise/client.hpp"
#include "reprise/history_file.hpp"
#include "reprise/worker.hpp"
#include "reprise/workflow.hpp"

namespace reprise {
namespace {

using namespace cluster_testing;
using namespace std::chrono_literals;
using engine::testing::TestPostgres;

// A PostgreSQL of the test's own, or skip (fail under CI).
#define DB_FAILOVER_PRIVATE_POSTGRES(var, settings)                                                           \
  std::string var##_why;                                                                                      \
  std::unique_ptr<TestPostgres> var = TestPostgres::start_private(settings, var##_why);                       \
  if (var == nullptr && TestPostgres::required()) FAIL() << "PostgreSQL is required under CI: " << var##_why; \
  if (var == nullptr) GTEST_SKIP() << "no PostgreSQL: " << var##_why;

std::unique_ptr<Worker> db_failover_worker(const std::string& addresses) {
  auto worker =
      std::make_unique<Worker>(Connection::remote(addresses),
                               WorkerOptions{.task_queue = "failover", .workflow_threads = 2, .activity_threads = 2});
  worker->register_workflow(cluster_hello_wf);
  worker->register_activity(cluster_greet_activity);
  worker->start();
  return worker;
}

TEST(ClusterDatabase, ANodeServesAgainAfterItsPostgresqlCrashesAndRestarts) {
  DB_FAILOVER_PRIVATE_POSTGRES(pg, {});
  const std::string url = pg->new_database();
  ASSERT_FALSE(url.empty());
  auto node = cluster_node(url, "a", "2s");
  auto connection = Connection::remote(node->address());
  auto worker = db_failover_worker(node->address());
  Client client(connection);
  ASSERT_EQ(client.execute(cluster_hello_wf, {.id = "before", .task_queue = "failover"}, std::string("before")),
            "hello before");

  pg->crash();
  ASSERT_EQ(pg->start_again(), "");
  const auto restarted = TestClock::now();

  // Its writes (a start) and its reads (a workflow task's history, the old
  // history) work again: a new workflow runs to its end.
  bool started = false;
  std::string result, last_error;
  while (!started && TestClock::now() - restarted < 20s) {
    try {
      client.start(cluster_hello_wf, {.id = "after", .task_queue = "failover"}, std::string("after"));
      started = true;
    } catch (const std::exception& e) {
      last_error = e.what();
      std::this_thread::sleep_for(200ms);
    }
  }
  ASSERT_TRUE(started) << "no start acknowledged within 20 s of the restart; the last refusal: " << last_error;
  try {
    result = client.handle(cluster_hello_wf, "after").result(20s);
  } catch (const std::exception& e) {
    last_error = e.what();
  }
  ASSERT_EQ(result, "hello after") << "last error: " << last_error;
  std::cout << "a workflow ran to its end "
            << std::chrono::duration_cast<std::chrono::milliseconds>(TestClock::now() - restarted).count()
            << " ms after PostgreSQL restarted\n";
  expect_whole_hello_history(fetch_history(*connection, "before"), "before");
  expect_whole_hello_history(fetch_history(*connection, "after"), "after");
  worker->stop();
}

TEST(ClusterDatabase, APrimaryLostAndItsSynchronousStandbyPromotedLosesNoAcknowledgedStart) {
  // Synchronous replication: a commit returns once the standby has it.
  DB_FAILOVER_PRIVATE_POSTGRES(primary, std::vector<std::string>{"synchronous_standby_names=*"});
  std::string why;
  std::unique_ptr<TestPostgres> standby = primary->start_standby({}, why);
  ASSERT_NE(standby, nullptr) << why;
  const std::string one_host_url = primary->new_database();
  ASSERT_FALSE(one_host_url.empty());
  ClusterDb primary_db(primary->url("postgres"));
  ASSERT_TRUE(wait_for(
      [&] { return primary_db.count("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'") == 1; }, 10s))
      << "the standby never became synchronous";
  // Both hosts; libpq connects to whichever takes writes.
  const std::string database = one_host_url.substr(one_host_url.rfind('/') + 1);
  const std::string url = "postgresql://postgres@127.0.0.1:" + std::to_string(primary->port()) +
                          ",127.0.0.1:" + std::to_string(standby->port()) + "/" + database +
                          "?target_session_attrs=read-write";

  auto a = cluster_node(url, "a", "1s"), b = cluster_node(url, "b", "1s");
  const std::string addresses = a->address() + "," + b->address();
  auto connection = Connection::remote(addresses);
  auto worker = db_failover_worker(b->address() + "," + a->address());
  Client client(connection);

  std::mutex mu;
  std::vector<std::string> acknowledged, refused;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> promoted_at_ms{-1}, first_after_promotion_ms{-1};
  const auto began = TestClock::now();
  auto since_began = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(TestClock::now() - began).count();
  };
  std::thread starter;
  // A failed assertion returns with the load still running: stop it first.
  struct StopOnExit {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~StopOnExit() {
      stop = true;
      if (thread.joinable()) thread.join();
    }
  } stop_on_exit{stop, starter};
  starter = std::thread([&] {
    for (int i = 0; !stop; ++i) {
      const std::string id = "failover-" + std::to_string(i);
      try {
        client.start(cluster_hello_wf, {.id = id, .task_queue = "failover", .workflow_task_timeout = 2s},
                     std::string(id));
        std::lock_guard lock(mu);
        acknowledged.push_back(id);
        if (promoted_at_ms >= 0 && first_after_promotion_ms < 0) first_after_promotion_ms = since_began();
      } catch (const RpcError& e) {
        std::lock_guard lock(mu);
        refused.push_back(id + ": " + e.what());
      }
      std::this_thread::sleep_for(20ms);
    }
  });

  std::this_thread::sleep_for(2s);
  primary->crash();
  std::this_thread::sleep_for(500ms);
  ASSERT_EQ(standby->promote(), "");
  promoted_at_ms = since_began();
  ASSERT_TRUE(wait_for([&] { return first_after_promotion_ms >= 0; }, 20s))
      << "no start acknowledged after the promotion";
  std::this_thread::sleep_for(2s);
  stop = true;
  starter.join();
  std::cout << acknowledged.size() << " starts acknowledged, " << refused.size()
            << " refused while the database was away; the first start acknowledged "
            << first_after_promotion_ms - promoted_at_ms << " ms after the standby was promoted\n";

  for (const std::string& id : acknowledged) {
    try {
      EXPECT_EQ(client.handle(cluster_hello_wf, id).result(30s), "hello " + id);
    } catch (const std::exception& e) {
      ADD_FAILURE() << id << ": " << e.what();
    }
  }
  worker->stop();
  for (const std::string& id : acknowledged) expect_whole_hello_history(fetch_history(*connection, id), id);
}

// The writer's connection drops at a COMMIT that carries a start: before the
// database has it (nothing committed), and after it committed with the
// answer lost. Either way the start is in doubt; the client is told so and
// tries again, and the workflow runs to its end, once. After the second cut
// the workflow's first task is in the task table though no commit the node
// saw succeed put it there: the node must find it (commit_in_doubt.cpp).
TEST(ClusterDatabase, AStartWhoseCommitIsCutBeforeOrAfterTheDatabaseHasItRunsToItsEndOnce) {
  DB_FAILOVER_PRIVATE_POSTGRES(pg, {});
  const std::string direct_url = pg->new_database();
  ASSERT_FALSE(direct_url.empty());
  CommitAnswerProxy proxy(pg->port());
  ASSERT_NE(proxy.port(), 0);
  const std::string database = direct_url.substr(direct_url.rfind('/') + 1);
  NodeLogOnFailure node_log;
  auto node = cluster_node("postgresql://postgres@127.0.0.1:" + std::to_string(proxy.port()) + "/" + database, "a",
                           "2s", NodeLogOnFailure::info_flags(), node_log.path());
  auto connection = Connection::remote(node->address());
  auto worker = db_failover_worker(node->address());
  Client client(connection);
  // The writer has its connection and its statements before the cut.
  ASSERT_EQ(client.execute(cluster_hello_wf, {.id = "warm", .task_queue = "failover"}, std::string("warm")),
            "hello warm");

  for (const auto& [cut, id] : {std::pair{CommitAnswerProxy::Cut::kBeforeTheDatabaseHasIt, "cut-before"},
                                std::pair{CommitAnswerProxy::Cut::kAfterTheDatabaseAnswered, "cut-after"}}) {
    const int answered_before = proxy.commits_answered_then_cut();
    proxy.cut_next_writer_commit(cut);
    std::string last_refusal = "none";
    const auto began = TestClock::now();
    bool started = false;
    while (!started && TestClock::now() - began < 20s) {
      try {
        client.start(cluster_hello_wf, {.id = id, .task_queue = "failover"}, std::string(id));
        started = true;
      } catch (const RpcError& e) {
        last_refusal = e.what();
        // A start that committed is there when the client asks again.
        started = e.code() == static_cast<int>(grpc::StatusCode::ALREADY_EXISTS);
        if (!started) std::this_thread::sleep_for(200ms);
      }
    }
    ASSERT_TRUE(started) << id << ": never acknowledged; the last refusal: " << last_refusal;
    std::string result, error;
    try {
      result = client.handle(cluster_hello_wf, id).result(20s);
    } catch (const std::exception& e) {
      error = e.what();
    }
    EXPECT_EQ(result, std::string("hello ") + id) << error << " (the start's refusal: " << last_refusal << ")";
    if (cut == CommitAnswerProxy::Cut::kAfterTheDatabaseAnswered) {
      EXPECT_EQ(proxy.commits_answered_then_cut(), answered_before + 1)
          << "the database never answered the cut COMMIT: the case was not made";
    }
    expect_whole_hello_history(fetch_history(*connection, id), id);
  }
  EXPECT_EQ(proxy.commits_cut(), 2);
  worker->stop();
}

}  // namespace
}  // namespace reprise
