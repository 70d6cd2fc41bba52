// A node's shard leases on PostgreSQL (pg_shard_leases.hpp) when a renewal
// is slow: whatever the node refused or skipped while its lease had run out
// by its own clock is looked at again only when the shard is lost and
// gained, so every such lapse must be announced as a loss.
#include "engine/store/postgres/pg_shard_leases.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "engine/store/postgres/postgres_store.hpp"
#include "test_postgres.hpp"

namespace reprise::engine {
namespace {

using namespace std::chrono_literals;

bool leases_wait_for(const std::function<bool()>& condition, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// A renewal that waits on the shard's row (a writer's batch locks it to
// fence its writes) while the lease runs out by the node's clock, and then
// goes through: the lapse it ends is a loss, and the shard is gained
// again. Before, the renewal only moved the lease on: the node had said it
// did not serve the shard, and nothing it skipped then was found again (a
// task committed in doubt and reloaded in that window stayed in the task
// table until the node restarted; commit_in_doubt.cpp).
TEST(PgShardLeases, ALeaseThatRanOutWhileItsRenewalWaitedOnTheRowIsLostAndGainedAgain) {
  REPRISE_POSTGRES_DATABASE(url);
  // Declared before the store: its lease thread counts into them until the
  // store is gone.
  std::atomic<int> lost{0}, gained{0};
  // A lease of 1 s: renewed every 250 ms; a renewal waits at most 250 ms on
  // a locked row; a renewal sent at t serves until t + 900 ms.
  PostgresStoreOptions options;
  options.shard_count = 4;
  options.cluster.node_id = "a";
  options.cluster.lease = 1000ms;
  auto store = PostgresStore::open(url, options);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  PgShardLeases& leases = (*store)->leases();
  leases.listen(
      {[&](const ShardSet& s) { gained += s[0] ? 1 : 0; }, [&](const ShardSet& s) { lost += s[0] ? 1 : 0; }, {}});
  auto fence = PgConnection::connect(url);
  ASSERT_TRUE(fence.is_ok()) << fence.status().to_string();

  // Each lapse ends in whichever way the timing gives: the round that sees
  // it before it renews, or the renewal that was waiting when it began.
  for (int lapse = 1; lapse <= 5; ++lapse) {
    ASSERT_TRUE(leases_wait_for([&] { return leases.serves(0); }, 10s)) << "lapse " << lapse << ": never served";
    const int lost_before = lost, gained_before = gained;
    ASSERT_TRUE((*fence)->exec("BEGIN").is_ok());
    ASSERT_TRUE((*fence)->query("SELECT 1 FROM shards WHERE shard_id = 0 FOR UPDATE").is_ok());
    ASSERT_TRUE(leases_wait_for([&] { return !leases.serves(0); }, 10s))
        << "lapse " << lapse << ": the lease never ran out while its row was locked";
    // The renewal waiting on the row goes through now.
    ASSERT_TRUE((*fence)->exec("COMMIT").is_ok());
    EXPECT_TRUE(leases_wait_for([&] { return lost > lost_before; }, 5s))
        << "lapse " << lapse << ": the node did not serve shard 0 for a while, and it was never announced lost";
    EXPECT_TRUE(leases_wait_for([&] { return gained > gained_before && leases.serves(0); }, 5s))
        << "lapse " << lapse << ": shard 0 was not gained again";
    if (::testing::Test::HasFailure()) return;
  }
}

}  // namespace
}  // namespace reprise::engine
