// StickyCache: the workflow instances a worker keeps between their tasks,
// bounded by count and bytes, least recently used evicted first.
//
// A run's instance is held by one task at a time: acquire() waits while
// another task of the same run holds its lease, then takes the cached
// instance out (none after a miss). The task gives the instance back with
// Lease::release() before it answers the server, so the run's next task,
// which the server may hand to another thread the moment the answer lands,
// finds it there instead of replaying the whole history.
//
// Thread safety: all members may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "worker/workflow_instance.hpp"

namespace reprise::worker {

class StickyCache {
 public:
  // max_instances 0 keeps nothing (leases still serialize a run's tasks).
  StickyCache(int max_instances, size_t max_bytes) : max_instances_(max_instances), max_bytes_(max_bytes) {}
  StickyCache(const StickyCache&) = delete;

  class Lease {
   public:
    Lease(Lease&& other) noexcept
        : cache_(std::exchange(other.cache_, nullptr)),
          run_id_(std::move(other.run_id_)),
          instance_(std::move(other.instance_)) {}
    Lease& operator=(Lease&&) = delete;
    ~Lease() { release(nullptr); }

    // The cached instance (taken out: the lease owns it), or null after a miss.
    std::unique_ptr<WorkflowInstance> take() { return std::move(instance_); }
    // Ends the lease, keeping `instance` for the run's next task (null: the
    // run keeps nothing). Later calls do nothing.
    void release(std::unique_ptr<WorkflowInstance> instance);

   private:
    friend class StickyCache;
    Lease(StickyCache& cache, std::string run_id, std::unique_ptr<WorkflowInstance> instance)
        : cache_(&cache), run_id_(std::move(run_id)), instance_(std::move(instance)) {}

    StickyCache* cache_;
    std::string run_id_;
    std::unique_ptr<WorkflowInstance> instance_;
  };

  // Waits until no other task holds run `run_id`, then leases it.
  Lease acquire(const std::string& run_id);
  // Leases run `run_id` if no other task holds it; nothing otherwise. For
  // a caller that must not block its thread (the simulator's fibers).
  std::optional<Lease> try_acquire(const std::string& run_id);
  // Drops the run's instance if it is cached (an answer the server refused).
  void evict(const std::string& run_id);
  // Whether the run's instance is cached or leased now (it may be evicted
  // the moment after: a hint, for asking the server for the run's next task).
  bool holds(const std::string& run_id) const;

  size_t size() const;
  size_t bytes() const;

 private:
  struct Entry {
    std::unique_ptr<WorkflowInstance> instance;
    std::list<std::string>::iterator lru_position;
    size_t bytes = 0;  // as of when it was put back
  };
  using Evicted = std::list<std::unique_ptr<WorkflowInstance>>;

  Lease lease_locked(const std::string& run_id);
  void end_lease(const std::string& run_id, std::unique_ptr<WorkflowInstance> instance);
  // Unlinks the run's entry (from the map and the LRU list alike) into `evicted`.
  void remove_locked(std::map<std::string, Entry>::iterator it, Evicted& evicted);

  const int max_instances_;
  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::condition_variable lease_ended_;
  std::set<std::string> leased_;
  std::map<std::string, Entry> entries_;
  std::list<std::string> lru_;  // most recent first; one node per entry
  size_t bytes_ = 0;
};

}  // namespace reprise::worker
