// ExecutionCache: the execution records this engine committed itself, so
// the transition that follows (and a result wait woken by the commit) need
// not read them back from the store (Temporal's history service keeps such
// a cache of mutable state).
//
// An entry is the record exactly as the store holds it after a commit this
// engine made and the store acknowledged: the version the commit was
// assigned, the state it wrote. It is trusted as long as nothing else
// writes the execution, which the engine ensures as follows:
//   - a commit that fails in any way (refused, ABORTED on a lost
//     condition, in doubt) drops the entries of every execution it
//     writes or deletes: the store may hold anything of them;
//   - a deletion (retention, DeleteWorkflow) drops the entry when it is
//     queued and again when it is answered;
//   - in a cluster, a node that gains or loses shards drops the entries of
//     those shards, and a commit that was under way while the shards
//     changed hands puts nothing (the generation below);
//   - a commit that still meets another version than the entry's (a writer
//     this node did not see) fails on the store's version check, which
//     drops the entry, and the engine runs the operation again on the
//     stored state; a row is dropped as stale only on the stored state.
// A task hand-out held in memory commits nothing and so meets no version
// check: there the cache relies on there being no other writer, which the
// database lock (SQLite) and the shard leases (a cluster) ensure.
// docs/engine.md, "The execution cache", says the same for operators.
//
// Bounded: at most `capacity` entries and `max_bytes` of state, the least
// recently used going first (a run's state holds its buffered signals and
// heartbeat details, up to megabytes); a state larger than `max_bytes` is
// not kept. A capacity of 0 keeps nothing (every read goes to the store).
//
// Thread safety: all methods may be called from any thread.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <optional>

#include "engine/store/records.hpp"

namespace reprise::engine {

class ExecutionCache {
 public:
  ExecutionCache(size_t capacity, size_t max_bytes) : capacity_(capacity), max_bytes_(max_bytes) {}

  // The record as this engine last committed it, if it is kept.
  std::optional<ExecutionRecord> find(const ExecutionKey& key) {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      ++misses_;
      return std::nullopt;
    }
    ++hits_;
    lru_.splice(lru_.begin(), lru_, it->second.used);
    return it->second.record;
  }

  // Changes with every drop_if(): a commit begun under an older
  // generation may have raced a shard's move, and puts nothing.
  uint64_t generation() const {
    std::lock_guard lock(mu_);
    return generation_;
  }

  // `write` was committed and the store gave it `version`. Without events
  // the next event id is the one of the version it replaced, known only
  // from an entry of that version; otherwise nothing is kept.
  void committed(const ExecutionWrite& write, int64_t version, uint64_t generation) {
    std::lock_guard lock(mu_);
    if (capacity_ == 0) return;
    auto it = entries_.find(write.key);
    std::optional<int64_t> next_event_id;
    if (write.events) {
      next_event_id = write.events->last_event_id + 1;
    } else if (write.expected_version == 0) {
      next_event_id = 1;
    } else if (it != entries_.end() && it->second.record.version == write.expected_version) {
      next_event_id = it->second.record.next_event_id;
    }
    if (generation != generation_ || !next_event_id || write.state.size() > max_bytes_) {
      if (it != entries_.end()) remove(it);
      return;
    }
    ExecutionRecord record{write.key, version, *next_event_id, write.status, write.state};
    if (it != entries_.end()) {
      bytes_ -= it->second.record.state.size();
      it->second.record = std::move(record);
      lru_.splice(lru_.begin(), lru_, it->second.used);
    } else {
      lru_.push_front(write.key);
      entries_.emplace(write.key, Entry{std::move(record), lru_.begin()});
    }
    bytes_ += write.state.size();
    while (entries_.size() > capacity_ || bytes_ > max_bytes_) remove(entries_.find(lru_.back()));
  }

  void erase(const ExecutionKey& key) {
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(key); it != entries_.end()) remove(it);
  }

  // Drops the entries `pred` picks (the shards a node gained or lost) and
  // starts a new generation.
  template <typename Pred>
  void drop_if(Pred pred) {
    std::lock_guard lock(mu_);
    ++generation_;
    for (auto it = entries_.begin(); it != entries_.end();) {
      auto next = std::next(it);
      if (pred(it->first)) remove(it);
      it = next;
    }
  }

  size_t size() const {
    std::lock_guard lock(mu_);
    return entries_.size();
  }
  // The bytes of state kept.
  size_t bytes() const {
    std::lock_guard lock(mu_);
    return bytes_;
  }
  // Reads answered from the cache, and those that went to the store.
  uint64_t hits() const {
    std::lock_guard lock(mu_);
    return hits_;
  }
  uint64_t misses() const {
    std::lock_guard lock(mu_);
    return misses_;
  }

 private:
  struct Entry {
    ExecutionRecord record;
    std::list<ExecutionKey>::iterator used;  // its place in lru_
  };
  using Entries = std::map<ExecutionKey, Entry>;

  void remove(Entries::iterator it) {
    bytes_ -= it->second.record.state.size();
    lru_.erase(it->second.used);
    entries_.erase(it);
  }

  const size_t capacity_;
  const size_t max_bytes_;
  mutable std::mutex mu_;
  Entries entries_;
  std::list<ExecutionKey> lru_;  // most recently used first
  size_t bytes_ = 0;             // of the entries' states
  uint64_t generation_ = 0;
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
};

}  // namespace reprise::engine
