#include "engine/store/postgres/pg_shard_leases.hpp"

#include <set>

#include "engine/store/rendezvous.hpp"
#include "engine/thread_name.hpp"

namespace reprise::engine {

namespace {

// "{1,5,9}": how a list of ids goes to PostgreSQL as one parameter
// ($n::text::bigint[]), which PgParams has no array type for.
std::string pg_array_literal(const std::vector<int64_t>& ids) {
  std::string out = "{";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(ids[i]);
  }
  return out + "}";
}

}  // namespace

Result<std::unique_ptr<PgShardLeases>> PgShardLeases::start(std::unique_ptr<PgConnection> db, int shard_count,
                                                            ShardLeaseOptions options) {
  if (options.node_id.empty()) return Status::invalid_argument("a cluster node needs a node id");
  if (options.lease < std::chrono::milliseconds(100)) {
    return Status::invalid_argument("the shard lease must be at least 100ms, got " +
                                    std::to_string(options.lease.count()) + "ms");
  }
  // A round never waits long on a row another node's open transaction has
  // locked (its writer fencing a batch): it tries again next round.
  REPRISE_RETURN_IF_ERROR(db->set_session("SET lock_timeout = '" + std::to_string(options.lease.count() / 4) + "ms'"));
  auto leases = std::unique_ptr<PgShardLeases>(new PgShardLeases(std::move(db), shard_count, std::move(options)));
  Status first = leases->round();
  if (!first.is_ok()) return first.with_context("joining the cluster");
  leases->thread_ = std::thread([l = leases.get()] { l->run(); });
  name_thread(leases->thread_, "shard-leases");
  return leases;
}

PgShardLeases::PgShardLeases(std::unique_ptr<PgConnection> db, int shard_count, ShardLeaseOptions options)
    : db_(std::move(db)),
      shard_count_(shard_count),
      options_(std::move(options)),
      held_(new std::atomic<int64_t>[static_cast<size_t>(shard_count)]),
      valid_until_(new std::atomic<int64_t>[static_cast<size_t>(shard_count)]),
      address_(options_.address) {
  for (int s = 0; s < shard_count_; ++s) {
    held_[s] = 0;
    valid_until_[s] = 0;
  }
}

PgShardLeases::~PgShardLeases() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Leaving: what it held is free at once, and it is no member any more.
  std::vector<int64_t> held;
  for (int s = 0; s < shard_count_; ++s) {
    if (held_[s].exchange(0) != 0) held.push_back(s);
  }
  PgParams p;
  p.add_text(options_.node_id).add_text(pg_array_literal(held));
  (void)db_->query(
      "UPDATE shards SET expires_at = now() - interval '1 millisecond' "
      "WHERE owner = $1 AND shard_id = ANY($2::text::bigint[])",
      p);
  (void)db_->query("DELETE FROM cluster_members WHERE node_id = $1", PgParams().add_text(options_.node_id));
}

int64_t PgShardLeases::steady_now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool PgShardLeases::serves(int64_t shard) const {
  if (shard < 0 || shard >= shard_count_) return false;
  return held_[shard].load() != 0 && steady_now_ns() < valid_until_[shard].load();
}

int64_t PgShardLeases::held_range(int64_t shard) const { return serves(shard) ? held_[shard].load() : 0; }

std::string PgShardLeases::owner_of(int64_t shard) const {
  std::lock_guard lock(mu_);
  auto owner = owners_.find(shard);
  if (owner == owners_.end() || owner->second.empty()) return "no node";
  auto member = members_.find(owner->second);
  return "node " + owner->second + (member == members_.end() ? "" : " at " + member->second);
}

std::string PgShardLeases::owner_address(int64_t shard) const {
  if (serves(shard)) return "";
  std::lock_guard lock(mu_);
  auto owner = owners_.find(shard);
  if (owner == owners_.end() || owner->second.empty() || owner->second == options_.node_id) return "";
  auto member = members_.find(owner->second);
  return member == members_.end() ? "" : member->second;
}

std::vector<std::string> PgShardLeases::peer_addresses() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> peers;
  for (const auto& [node, address] : members_) {
    if (node != options_.node_id && !address.empty()) peers.push_back(address);
  }
  return peers;
}

std::string PgShardLeases::queue_owner_address(int64_t queue_key) const {
  std::lock_guard lock(mu_);
  const std::string owner = rendezvous_owner(queue_key, member_ids_);
  if (owner.empty() || owner == options_.node_id) return "";
  auto member = members_.find(owner);
  return member == members_.end() ? "" : member->second;
}

size_t PgShardLeases::live_nodes() const {
  std::lock_guard lock(mu_);
  return member_ids_.size();
}

std::string PgShardLeases::served_array() const {
  std::vector<int64_t> served;
  for (int s = 0; s < shard_count_; ++s) {
    if (serves(s)) served.push_back(s);
  }
  if (static_cast<int>(served.size()) == shard_count_) return "";
  return pg_array_literal(served);
}

void PgShardLeases::set_address(std::string address) {
  std::lock_guard lock(mu_);
  address_ = std::move(address);
  announce_now_ = true;  // the others may forward to it, and give it its shards, from the next round on
  cv_.notify_all();
}

void PgShardLeases::listen(ShardListener listener) {
  std::lock_guard lock(listener_mu_);
  listener_ = std::move(listener);
  if (!listener_.gained) return;
  ShardSet now(static_cast<size_t>(shard_count_), false);
  for (int s = 0; s < shard_count_; ++s) now[s] = serves(s);
  listener_.gained(now);
}

void PgShardLeases::announce(const ShardSet& shards, bool gained) {
  std::lock_guard lock(listener_mu_);
  const auto& call = gained ? listener_.gained : listener_.lost;
  if (call) call(shards);
}

void PgShardLeases::drop(const ShardSet& shards) {
  bool any = false;
  for (int s = 0; s < shard_count_; ++s) {
    if (!shards[s]) continue;
    held_[s] = 0;
    any = true;
  }
  if (any) announce(shards, false);
}

Status PgShardLeases::round() {
  // Leases count from before anything is sent: the database's expiry is
  // later than this by however long the statements take.
  const int64_t sent = steady_now_ns();
  const int64_t lease_ms = options_.lease.count();
  const std::string& me = options_.node_id;
  std::string address;
  {
    std::lock_guard lock(mu_);
    address = address_;
  }
  Result<PgResult> beat = db_->query(
      "INSERT INTO cluster_members (node_id, address, heartbeat_at) VALUES ($1, $2, now()) "
      "ON CONFLICT (node_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, "
      // A node restarting under its name keeps the address it had until it
      // announces its new one (at once, set_address), and so its shards.
      "address = CASE WHEN excluded.address = '' THEN cluster_members.address ELSE excluded.address END",
      PgParams().add_text(me).add_text(address));
  if (!beat) return beat.status();
  Result<PgResult> live = db_->query(
      "SELECT node_id, address FROM cluster_members WHERE heartbeat_at > now() - $1 * interval '1 millisecond' "
      "ORDER BY node_id",
      PgParams().add(lease_ms));
  if (!live) return live.status();
  Result<PgResult> shards =
      db_->query("SELECT shard_id, owner, range_id, expires_at < now() FROM shards ORDER BY shard_id");
  if (!shards) return shards.status();

  // The nodes shards are spread over: the live ones that announced an
  // address, since a request for a shard is forwarded to its owner's. A
  // node that has none yet (it opened its store and is not yet listening)
  // gets shards only when no live node has one: a lone node takes them all
  // before it serves.
  std::vector<std::string> nodes, without_address;
  std::map<std::string, std::string> members;
  for (int i = 0; i < live->rows(); ++i) {
    const std::string node = live->get_bytes(i, 0);
    members[node] = live->get_bytes(i, 1);
    (members[node].empty() ? without_address : nodes).push_back(node);
  }
  if (nodes.empty()) nodes = std::move(without_address);
  std::map<int64_t, std::string> owners;
  // Who holds each shard under which range_id ("" while its lease has run
  // out): a node that restarted within a lease (still a live member all
  // along) shows as a new range_id on the shards it takes back.
  std::vector<std::pair<std::string, int64_t>> holders;
  const size_t n = static_cast<size_t>(shard_count_);
  ShardSet lost(n, false), released(n, false);
  std::vector<int64_t> renew_ids, renew_ranges, acquire_ids, release_ids, release_ranges;
  const int64_t now = steady_now_ns();
  for (int i = 0; i < shards->rows(); ++i) {
    const int64_t s = shards->get_int(i, 0);
    if (s < 0 || s >= shard_count_) continue;
    const std::string owner = shards->get_bytes(i, 1);
    const int64_t range = shards->get_int(i, 2);
    const bool expired = shards->get_int(i, 3) != 0;
    owners[s] = expired ? "" : owner;
    holders.emplace_back(expired ? "" : owner, range);
    const int64_t held = held_[s].load();
    // Another node took it, or it ran out by this node's clock before a
    // renewal came back (the node was paused, or cut off): whatever the
    // node remembers of it may be stale.
    if (held != 0 && (owner != me || range != held || now >= valid_until_[s].load())) lost[s] = true;
    const bool mine = held != 0 && !lost[s];
    const std::string target = rendezvous_owner(s, nodes);
    if (target == me) {
      if (mine) {
        renew_ids.push_back(s);
        renew_ranges.push_back(range);
      } else if (expired || owner == me) {
        acquire_ids.push_back(s);
      }
    } else if (owner == me && !expired) {
      // Another live node's by now: stop serving it, then let it go.
      if (mine) released[s] = true;
      owners[s] = target;  // what to tell a request for it
      release_ids.push_back(s);
      release_ranges.push_back(range);
    }
  }
  MembersChange change;
  {
    std::lock_guard lock(mu_);
    owners_ = std::move(owners);
    change.before = member_ids_;
    change.now = nodes;
    // holders_ keeps each shard's last holder across a lapse of its lease.
    holders_.resize(holders.size());
    for (size_t s = 0; s < holders.size(); ++s) {
      const auto& [holder, range] = holders[s];
      if (holder.empty()) continue;
      if (holder == holders_[s].first && range != holders_[s].second) change.took_back.insert(holder);
      holders_[s] = holders[s];
    }
    members_ = std::move(members);
    member_ids_ = nodes;
  }
  drop(lost);
  drop(released);

  if (!release_ids.empty()) {
    Result<PgResult> r = db_->query(
        "UPDATE shards SET expires_at = now() - interval '1 millisecond' "
        "FROM unnest($2::text::bigint[], $3::text::bigint[]) AS h(id, range_id) "
        "WHERE shards.shard_id = h.id AND shards.range_id = h.range_id AND shards.owner = $1",
        PgParams().add_text(me).add_text(pg_array_literal(release_ids)).add_text(pg_array_literal(release_ranges)));
    if (!r) return r.status();
  }
  // The lease this round gives, by the node's clock, with a tenth to spare
  // for the two clocks running at slightly different rates.
  const int64_t valid_until = sent + std::chrono::nanoseconds(options_.lease).count() * 9 / 10;
  if (!renew_ids.empty()) {
    Result<PgResult> r = db_->query(
        "UPDATE shards SET expires_at = now() + $4 * interval '1 millisecond' "
        "FROM unnest($2::text::bigint[], $3::text::bigint[]) AS h(id, range_id) "
        "WHERE shards.shard_id = h.id AND shards.range_id = h.range_id AND shards.owner = $1 "
        "RETURNING shards.shard_id",
        PgParams()
            .add_text(me)
            .add_text(pg_array_literal(renew_ids))
            .add_text(pg_array_literal(renew_ranges))
            .add(lease_ms));
    if (!r) return r.status();
    std::set<int64_t> renewed;
    for (int i = 0; i < r->rows(); ++i) renewed.insert(r->get_int(i, 0));
    ShardSet gone(n, false);
    for (int64_t s : renew_ids) {
      if (renewed.count(s) == 0) {
        gone[s] = true;
        continue;
      }
      // Ran out by this node's clock before the renewal came back (it
      // waited on the row a writer's batch had locked, say): serves() said
      // no meanwhile, and what was refused or skipped then is found again
      // only when the shard is lost and gained, as on any lapse. Checked
      // after the new deadline is in: every serves() that said no came
      // before it.
      const int64_t ran_out_at = valid_until_[s].exchange(valid_until);
      if (steady_now_ns() >= ran_out_at) gone[s] = true;
    }
    drop(gone);
  }
  if (!acquire_ids.empty()) {
    Result<PgResult> r = db_->query(
        "UPDATE shards SET owner = $1, range_id = range_id + 1, expires_at = now() + $3 * interval '1 millisecond' "
        "WHERE shard_id = ANY($2::text::bigint[]) AND (owner = $1 OR expires_at < now()) "
        "RETURNING shard_id, range_id",
        PgParams().add_text(me).add_text(pg_array_literal(acquire_ids)).add(lease_ms));
    if (!r) return r.status();
    ShardSet gained(n, false);
    for (int i = 0; i < r->rows(); ++i) {
      const int64_t s = r->get_int(i, 0);
      if (s < 0 || s >= shard_count_) continue;
      valid_until_[s] = valid_until;
      held_[s] = r->get_int(i, 1);
      gained[s] = true;
    }
    {
      std::lock_guard lock(mu_);
      for (int s = 0; s < shard_count_; ++s) {
        if (gained[s]) owners_[s] = me;
      }
    }
    if (r->rows() > 0) announce(gained, true);
  }
  if (change.before != change.now || !change.took_back.empty()) {
    std::lock_guard lock(listener_mu_);
    if (listener_.members_changed) listener_.members_changed(change);
  }
  // Members silent for ten leases are gone for good.
  Result<PgResult> swept =
      db_->query("DELETE FROM cluster_members WHERE heartbeat_at < now() - $1 * interval '1 millisecond'",
                 PgParams().add(10 * lease_ms));
  return swept.status();
}

void PgShardLeases::run() {
  const auto every = options_.lease / 4;
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, every, [this] { return stopping_ || announce_now_; });
    if (stopping_) break;
    announce_now_ = false;
    lock.unlock();
    Status s = round();
    if (!s.is_ok() && db_->broken()) (void)db_->reconnect();
    if (!s.is_ok()) {
      // Cut off from the database: what ran out by the clock is lost.
      ShardSet overdue(static_cast<size_t>(shard_count_), false);
      const int64_t now = steady_now_ns();
      for (int sh = 0; sh < shard_count_; ++sh) overdue[sh] = held_[sh].load() != 0 && now >= valid_until_[sh].load();
      drop(overdue);
    }
    lock.lock();
  }
}

}  // namespace reprise::engine
