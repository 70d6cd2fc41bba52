#include "worker/sticky_cache.hpp"

namespace reprise::worker {

void StickyCache::Lease::release(std::unique_ptr<WorkflowInstance> instance) {
  instance_.reset();
  if (StickyCache* cache = std::exchange(cache_, nullptr)) cache->end_lease(run_id_, std::move(instance));
}

StickyCache::Lease StickyCache::acquire(const std::string& run_id) {
  std::unique_lock lock(mu_);
  lease_ended_.wait(lock, [&] { return !leased_.contains(run_id); });
  return lease_locked(run_id);
}

std::optional<StickyCache::Lease> StickyCache::try_acquire(const std::string& run_id) {
  std::lock_guard lock(mu_);
  if (leased_.contains(run_id)) return std::nullopt;
  return lease_locked(run_id);
}

StickyCache::Lease StickyCache::lease_locked(const std::string& run_id) {
  leased_.insert(run_id);
  std::unique_ptr<WorkflowInstance> cached;
  if (auto it = entries_.find(run_id); it != entries_.end()) {
    cached = std::move(it->second.instance);
    Evicted none;
    remove_locked(it, none);
  }
  return Lease(*this, run_id, std::move(cached));
}

void StickyCache::evict(const std::string& run_id) {
  Evicted evicted;  // destroyed after the lock is let go: unwinding frames takes time
  std::lock_guard lock(mu_);
  if (auto it = entries_.find(run_id); it != entries_.end()) remove_locked(it, evicted);
}

void StickyCache::end_lease(const std::string& run_id, std::unique_ptr<WorkflowInstance> instance) {
  Evicted evicted;
  const size_t instance_bytes = instance ? instance->approximate_bytes() : 0;
  {
    std::lock_guard lock(mu_);
    leased_.erase(run_id);
    if (instance && max_instances_ > 0) {
      // Replaced, never duplicated: one entry and one LRU node per run.
      if (auto old = entries_.find(run_id); old != entries_.end()) remove_locked(old, evicted);
      lru_.push_front(run_id);
      entries_[run_id] = {std::move(instance), lru_.begin(), instance_bytes};
      bytes_ += instance_bytes;
      // The least recently used go first; an instance larger than the whole
      // bound is not kept at all.
      while (!entries_.empty() && (static_cast<int>(entries_.size()) > max_instances_ || bytes_ > max_bytes_)) {
        remove_locked(entries_.find(lru_.back()), evicted);
      }
    } else {
      evicted.push_back(std::move(instance));
    }
  }
  lease_ended_.notify_all();
}

void StickyCache::remove_locked(std::map<std::string, Entry>::iterator it, Evicted& evicted) {
  bytes_ -= it->second.bytes;
  lru_.erase(it->second.lru_position);
  evicted.push_back(std::move(it->second.instance));
  entries_.erase(it);
}

bool StickyCache::holds(const std::string& run_id) const {
  std::lock_guard lock(mu_);
  return entries_.count(run_id) > 0 || leased_.count(run_id) > 0;
}

size_t StickyCache::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

size_t StickyCache::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace reprise::worker
