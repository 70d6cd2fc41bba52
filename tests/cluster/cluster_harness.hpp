// What the cluster tests share: a node (a reprise-server on the test's
// PostgreSQL database, with a name and a short lease), the flags of a node
// that serves mutual TLS and a caller's credentials for it, the test's own
// look at the database, waiting for a condition, such as two nodes
// splitting the shards, and the hello workflow the load tests run with the
// check that its history is whole.
#pragma once

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../server/server_harness.hpp"
#include "../server/test_certificates.hpp"
#include "../store/test_postgres.hpp"
#include "engine/store/postgres/pg_connection.hpp"
#include "engine/store/shard.hpp"
#include "reprise/activity.hpp"
#include "reprise/workflow.hpp"

namespace reprise::cluster_testing {

using engine::PgConnection;
using engine::PgParams;
using TestClock = std::chrono::steady_clock;  // not reprise::Clock, the SDK's

constexpr int kShards = engine::kDefaultShardCount;

// A node of the cluster: a server with a name of its own and short leases,
// and any further flags. With `stderr_log`, its log goes to that file.
inline std::unique_ptr<Server> cluster_node(const std::string& db, const std::string& node_id, const std::string& lease,
                                            std::vector<std::string> more_flags = {},
                                            const std::string& stderr_log = "") {
  std::vector<std::string> flags{"--node-id", node_id, "--shard-lease", lease};
  flags.insert(flags.end(), more_flags.begin(), more_flags.end());
  return std::make_unique<Server>(db, flags, stderr_log);
}

// A node's whole log, kept in a file and printed if the test has failed by
// the time this is destroyed: an intermittent failure is understood from
// what the node did (declare it before the node, so it outlives it).
class NodeLogOnFailure {
 public:
  // The flags that make the node log each workflow's start and close, its
  // shard changes and its reloads, not only warnings.
  static std::vector<std::string> info_flags() { return {"--log-level", "info"}; }
  std::string path() const { return dir_.file("node.log"); }
  ~NodeLogOnFailure() {
    if (!::testing::Test::HasFailure()) return;
    std::ifstream in(path());
    std::cerr << "--- the node's log (" << path() << ") ---\n" << in.rdbuf() << "--- end of the node's log ---\n";
  }

 private:
  engine::testing::TempDir dir_;
};

// The flags of a node that serves mutual TLS with `c`'s node certificate,
// requires its callers' certificates signed by `c`'s CA, and checks the
// other nodes' against it when it forwards to them. The nodes announce
// their host name, which the certificate does not carry: the name it does,
// localhost, is given.
inline std::vector<std::string> mutual_tls_node_flags(const Certificates& c) {
  return {"--tls-cert",     c.path("node.pem"), "--tls-key",      c.path("node.key"),       "--tls-client-ca",
          c.path("ca.pem"), "--tls-peer-ca",    c.path("ca.pem"), "--tls-peer-server-name", "localhost"};
}
// A caller's credentials for such a node: `c`'s CA trusted, `c`'s worker
// certificate presented.
inline std::shared_ptr<grpc::ChannelCredentials> mutual_tls_worker_credentials(const Certificates& c) {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = c.read("ca.pem");
  options.pem_cert_chain = c.read("worker.pem");
  options.pem_private_key = c.read("worker.key");
  return grpc::SslCredentials(options);
}

// The test's own look at the database.
class ClusterDb {
 public:
  explicit ClusterDb(const std::string& url) {
    auto c = PgConnection::connect(url);
    EXPECT_TRUE(c.is_ok()) << c.status().to_string();
    if (c) db_ = std::move(*c);
  }
  int64_t count(const std::string& sql, const PgParams& params = {}) {
    auto r = db_->query(sql, params);
    EXPECT_TRUE(r.is_ok()) << sql << ": " << r.status().to_string();
    return r ? r->get_int(0, 0) : -1;
  }
  // Shards whose unexpired lease `node` holds.
  int64_t shards_of(const std::string& node) {
    return count("SELECT count(*) FROM shards WHERE owner = $1 AND expires_at > now()", PgParams().add_text(node));
  }
  // The node whose unexpired lease holds the shard of `workflow_id` ("" when none).
  std::string owner_of(const std::string& workflow_id) {
    auto r = db_->query("SELECT owner FROM shards WHERE shard_id = $1 AND expires_at > now()",
                        PgParams().add(engine::shard_of("default", workflow_id, kShards)));
    return r && r->rows() == 1 ? r->get_bytes(0, 0) : "";
  }
  PgConnection& connection() { return *db_; }

 private:
  std::unique_ptr<PgConnection> db_;
};

// Waits up to `limit` for `done`; how long it took, or nothing.
template <typename Done>
std::optional<std::chrono::milliseconds> wait_for(Done done, std::chrono::milliseconds limit) {
  const auto start = TestClock::now();
  while (TestClock::now() - start < limit) {
    if (done()) return std::chrono::duration_cast<std::chrono::milliseconds>(TestClock::now() - start);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::nullopt;
}

// Waits up to 10 s for nodes `first` and `second` to split the shards: each
// holds some, and together all of them.
inline bool shards_split_between(ClusterDb& db, const std::string& first, const std::string& second) {
  return wait_for(
             [&] {
               const int64_t of_first = db.shards_of(first), of_second = db.shards_of(second);
               return of_first > 0 && of_second > 0 && of_first + of_second == kShards;
             },
             std::chrono::seconds(10))
      .has_value();
}

inline std::string cluster_greet(ActivityContext&, std::string name) { return "hello " + name; }
inline constexpr Activity<&cluster_greet> cluster_greet_activity{"cluster_greet"};

// One activity, so a run needs its node for two workflow tasks and one
// activity task: what a kill can catch in flight.
inline Workflow<std::string> cluster_hello(WorkflowContext& ctx, std::string name) {
  co_return co_await ctx.execute(
      cluster_greet_activity,
      ActivityOptions::start_to_close(std::chrono::seconds(3)).retry_initial_interval(std::chrono::milliseconds(100)),
      name);
}
inline constexpr WorkflowDef<&cluster_hello> cluster_hello_wf{"cluster_hello"};

// Each event of a hello run's history once, in order, and the run whole:
// started, its activity scheduled and completed, and the run completed,
// each once.
inline void expect_whole_hello_history(const v1::History& history, const std::string& id) {
  int started = 0, scheduled = 0, activity_completed = 0, completed = 0;
  for (int j = 0; j < history.events_size(); ++j) {
    const v1::HistoryEvent& e = history.events(j);
    ASSERT_EQ(e.event_id(), j + 1) << id << ": no event lost or doubled";
    started += e.has_workflow_execution_started() ? 1 : 0;
    scheduled += e.has_activity_task_scheduled() ? 1 : 0;
    activity_completed += e.has_activity_task_completed() ? 1 : 0;
    completed += e.has_workflow_execution_completed() ? 1 : 0;
  }
  // On a failure, what the run did get: each event's kind, in order.
  std::string events;
  for (const v1::HistoryEvent& e : history.events()) {
    events += " " + std::to_string(e.event_id()) + ":" + v1::EventType_Name(e.event_type());
  }
  EXPECT_EQ(started, 1) << id << ":" << events;
  EXPECT_EQ(scheduled, 1) << id << ":" << events;
  EXPECT_EQ(activity_completed, 1) << id << ":" << events;
  EXPECT_EQ(completed, 1) << id << ":" << events;
}

}  // namespace reprise::cluster_testing
