// What the cluster tests share: a node (a reprise-server on the test's
// PostgreSQL database, with a name and a short lease), the test's own look
// at the database, and waiting for a condition.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../server/server_harness.hpp"
#include "../store/test_postgres.hpp"
#include "engine/store/postgres/pg_connection.hpp"
#include "engine/store/shard.hpp"

namespace reprise::cluster_testing {

using engine::PgConnection;
using engine::PgParams;
using TestClock = std::chrono::steady_clock;  // not reprise::Clock, the SDK's

constexpr int kShards = engine::kDefaultShardCount;

// A node of the cluster: a server with a name of its own and short leases,
// and any further flags.
inline std::unique_ptr<Server> cluster_node(const std::string& db, const std::string& node_id, const std::string& lease,
                                            std::vector<std::string> more_flags = {}) {
  std::vector<std::string> flags{"--node-id", node_id, "--shard-lease", lease};
  flags.insert(flags.end(), more_flags.begin(), more_flags.end());
  return std::make_unique<Server>(db, flags);
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

}  // namespace reprise::cluster_testing
