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
// With the record, an entry keeps the history batches the last commits
// appended (at most kRecentHistoryBytes of them, contiguous up to the
// record's last event): what the engine reads right after a commit (the
// events of a task it hands out, an activity's input, the close event a
// result wait answers with) comes from memory, not from a read transaction
// that reloads the pages the commit changed.
//
// Bounded: at most `capacity` entries and `max_bytes` of state and kept
// history, the least recently used going first (a run's state holds its
// buffered signals and heartbeat details, up to megabytes); a state larger
// than `max_bytes` is not kept. A capacity of 0 keeps nothing (every read
// goes to the store).
//
// Thread safety: all methods may be called from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/store/records.hpp"

namespace reprise::engine {

class ExecutionCache {
 public:
  // The history kept per entry: a hello workflow's whole history is under
  // 2 KiB, a task's events since the worker's last task rarely more.
  static constexpr size_t kRecentHistoryBytes = 64 << 10;

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

  // The batches of the run's history from `from_event_id` on (at most
  // `max_batches`, as Store::read_history answers), if the entry holds the
  // history from there to its last event. The caller knows the events up
  // to `known_last` are stored: the entry is put in just after the store
  // commits, so a reader that saw a commit elsewhere (a record read from
  // the store, a task row) may find the entry a commit behind; an empty
  // answer before `known_last` would then claim an end that is not, and is
  // not given. nullopt: read the store.
  std::optional<std::vector<HistoryBatch>> history(const ExecutionKey& key, int64_t from_event_id, int max_batches,
                                                   int64_t known_last) {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.recent.empty() || from_event_id < it->second.recent.front().first_event_id ||
        (from_event_id <= known_last && it->second.record.next_event_id <= from_event_id)) {
      ++history_misses_;
      return std::nullopt;
    }
    ++history_hits_;
    std::vector<HistoryBatch> out;
    for (const HistoryBatch& batch : it->second.recent) {
      if (static_cast<int>(out.size()) >= max_batches) break;
      if (batch.last_event_id >= from_event_id) out.push_back(batch);
    }
    return out;
  }

  // Changes with every drop_if(): a commit begun under an older
  // generation may have raced a shard's move, and puts nothing.
  uint64_t generation() const {
    std::lock_guard lock(mu_);
    return generation_;
  }

  // `write` was committed and the store gave it `version`. Without events
  // the next event id is the one of the version it replaced, known only
  // from an entry of that version; otherwise nothing is kept. A batch
  // without its data (the caller leaves out one over kRecentHistoryBytes)
  // only says where the history ends.
  void committed(const ExecutionWrite& write, int64_t version, uint64_t generation) {
    std::lock_guard lock(mu_);
    if (capacity_ == 0) return;
    auto it = entries_.find(write.key);
    const bool continues = it != entries_.end() && it->second.record.version == write.expected_version;
    std::optional<int64_t> next_event_id;
    if (write.events) {
      next_event_id = write.events->last_event_id + 1;
    } else if (write.expected_version == 0) {
      next_event_id = 1;
    } else if (continues) {
      next_event_id = it->second.record.next_event_id;
    }
    if (generation != generation_ || !next_event_id || write.state.size() > max_bytes_) {
      if (it != entries_.end()) remove(it);
      return;
    }
    if (it == entries_.end()) {
      lru_.push_front(write.key);
      it = entries_.emplace(write.key, Entry{{}, {}, lru_.begin()}).first;
    } else {
      bytes_ -= it->second.bytes();
      lru_.splice(lru_.begin(), lru_, it->second.used);
    }
    Entry& entry = it->second;
    // The kept history goes on from the version this write replaced, or
    // starts again at this write's batch.
    const bool follows = continues && write.events && entry.record.next_event_id == write.events->first_event_id;
    if (!continues) entry.recent.clear();
    if (write.events) {
      const bool fits = !write.events->data.empty() && write.events->data.size() <= kRecentHistoryBytes;
      if (!follows || !fits) entry.recent.clear();
      if (fits) entry.recent.push_back(*write.events);
    }
    entry.record = ExecutionRecord{write.key, version, *next_event_id, write.status, write.state};
    // Within the bound per run, and never at the cost of the run's state.
    size_t recent_bytes = entry.bytes() - write.state.size();
    while (!entry.recent.empty() &&
           (recent_bytes > kRecentHistoryBytes || write.state.size() + recent_bytes > max_bytes_)) {
      recent_bytes -= entry.recent.front().data.size();
      entry.recent.pop_front();
    }
    bytes_ += entry.bytes();
    while (!lru_.empty() && (entries_.size() > capacity_ || bytes_ > max_bytes_)) remove(entries_.find(lru_.back()));
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

  // What the cache holds and how its reads went, since it was made.
  struct Stats {
    size_t entries = 0;
    size_t bytes = 0;           // of the entries' states and history
    uint64_t hits = 0;          // execution reads answered from the cache
    uint64_t misses = 0;        // and those that went to the store
    uint64_t history_hits = 0;  // history reads answered from the cache
    uint64_t history_misses = 0;
  };
  Stats stats() const {
    std::lock_guard lock(mu_);
    return {entries_.size(), bytes_, hits_, misses_, history_hits_, history_misses_};
  }

 private:
  struct Entry {
    ExecutionRecord record;
    std::deque<HistoryBatch> recent;         // contiguous, the last ending at record.next_event_id - 1
    std::list<ExecutionKey>::iterator used;  // its place in lru_

    size_t bytes() const {
      size_t n = record.state.size();
      for (const HistoryBatch& batch : recent) n += batch.data.size();
      return n;
    }
  };
  // Hashed: the writer's thread looks an entry up for every write it
  // commits, and comparing keys of three strings down a tree showed in
  // its profile.
  struct KeyHash {
    size_t operator()(const ExecutionKey& key) const {
      const std::hash<std::string> h;
      return h(key.run_id) ^ (h(key.workflow_id) * 31) ^ (h(key.namespace_id) * 131);
    }
  };
  using Entries = std::unordered_map<ExecutionKey, Entry, KeyHash>;

  // Removes the entry, its bytes counted off.
  void remove(Entries::iterator it) {
    bytes_ -= it->second.bytes();
    lru_.erase(it->second.used);
    entries_.erase(it);
  }

  const size_t capacity_;
  const size_t max_bytes_;
  mutable std::mutex mu_;
  Entries entries_;
  std::list<ExecutionKey> lru_;  // most recently used first
  size_t bytes_ = 0;             // of the entries' states and history
  uint64_t generation_ = 0;
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
  uint64_t history_hits_ = 0;
  uint64_t history_misses_ = 0;
};

}  // namespace reprise::engine
