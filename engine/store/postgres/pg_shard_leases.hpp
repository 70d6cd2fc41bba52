// PgShardLeases: this node's membership of the cluster and its shard leases
// in a PostgreSQL database (docs/cluster.md).
//
// Every `lease / 4` a thread of its own, on a connection of its own:
//   1. heartbeats its row of cluster_members (node id, address, now());
//   2. reads the live members (a heartbeat within one lease) and the shards;
//   3. gives each shard to a live member by rendezvous hashing
//      (rendezvous.hpp), and for this node's share:
//      - renews what it holds: UPDATE shards SET expires_at = now() + lease
//        WHERE shard_id = s AND owner = me AND range_id = held;
//      - acquires what is free: UPDATE shards SET owner = me,
//        range_id = range_id + 1, expires_at = now() + lease
//        WHERE shard_id = s AND (owner = me OR expires_at < now());
//      - releases what another live member should have (expires_at in the
//        past), once it has stopped serving it.
// A shard whose renewal finds it no longer this node's, or whose lease ran
// out by this node's clock before a renewal came back, is lost: the
// listener hears it, and the writer refuses its transitions. Expiry is the
// database's clock; serves() counts the lease from before the renewal was
// sent by the node's steady clock, so the node stops serving before the
// database lets another take the shard.
//
// The writer fences each transition with held_range() (postgres_writer.hpp):
// its batch locks the shard's row only if owner and range_id are still
// these, so a node that lost a shard never writes to it again, however
// late its writes arrive.
//
// Thread safety: all methods may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/store/postgres/pg_connection.hpp"
#include "engine/store/shard_ownership.hpp"

namespace reprise::engine {

struct ShardLeaseOptions {
  // Unique among the cluster's nodes; the same across a node's restarts
  // lets it take its shards back at once instead of after their leases.
  std::string node_id;
  // Where other nodes and clients reach this node (host:port).
  std::string address;
  // How long a lease lasts unrenewed; renewed every quarter of it. A node
  // that stops (crash, pause, partition) loses its shards after about this.
  std::chrono::milliseconds lease{10'000};
};

class PgShardLeases final : public ShardOwnership {
 public:
  // Joins the cluster and runs the first round before it returns, so a
  // node alone takes every free shard before it serves.
  static Result<std::unique_ptr<PgShardLeases>> start(std::unique_ptr<PgConnection> db, int shard_count,
                                                      ShardLeaseOptions options);
  // Leaves: stops serving, releases its leases and removes its member row,
  // so the other nodes take its shards at their next round.
  ~PgShardLeases() override;

  int shard_count() const override { return shard_count_; }
  bool serves(int64_t shard) const override;
  std::string owner_of(int64_t shard) const override;
  std::string owner_address(int64_t shard) const override;
  std::vector<std::string> peer_addresses() const override;
  std::string queue_owner_address(int64_t queue_key) const override;
  size_t live_nodes() const override;
  void listen(ShardListener listener) override;
  using ShardOwnership::serves;

  // The range_id this node holds `shard` with; 0 when it does not serve it.
  int64_t held_range(int64_t shard) const;
  // Every shard it serves now, as a PostgreSQL array literal ("{1,5,9}"),
  // or "" when it serves all of them.
  std::string served_array() const;
  const std::string& node_id() const { return options_.node_id; }
  // The address to announce, in a round at once (a server that listens on
  // port 0 learns its port after the store is open). A node gets shards
  // only once it has one, unless no live node has.
  void set_address(std::string address);

 private:
  PgShardLeases(std::unique_ptr<PgConnection> db, int shard_count, ShardLeaseOptions options);
  // One round of heartbeat, renewals, releases and acquisitions.
  Status round();
  void run();
  void drop(const ShardSet& shards);
  void announce(const ShardSet& shards, bool gained);
  int64_t steady_now_ns() const;

  std::unique_ptr<PgConnection> db_;  // the lease thread's alone
  const int shard_count_;
  ShardLeaseOptions options_;

  // Per shard: the range_id held (0: none) and until when, in steady-clock
  // nanoseconds, this node may serve it.
  std::unique_ptr<std::atomic<int64_t>[]> held_;
  std::unique_ptr<std::atomic<int64_t>[]> valid_until_;

  mutable std::mutex mu_;                                 // what follows
  std::map<int64_t, std::string> owners_;                 // shard -> its owner node, as last read
  std::map<std::string, std::string> members_;            // live node -> address
  std::vector<std::string> member_ids_;                   // the keys of members_, for rendezvous hashing
  std::vector<std::pair<std::string, int64_t>> holders_;  // per shard: its last holder seen, under which range_id
  std::string address_;
  bool announce_now_ = false;  // an address was set: a round at once
  bool stopping_ = false;
  std::condition_variable cv_;

  std::mutex listener_mu_;  // held while a callback runs
  ShardListener listener_;

  std::thread thread_;  // last: starts once everything above is ready
};

}  // namespace reprise::engine
