#include "engine/deadline_scheduler.hpp"

#include "engine/thread_name.hpp"

namespace reprise::engine {

DeadlineScheduler::DeadlineScheduler() : thread_([this] { run(); }) {}

DeadlineScheduler::~DeadlineScheduler() { stop(); }

void DeadlineScheduler::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    due_.clear();
    when_.clear();
  }
  cv_.notify_all();
  std::lock_guard join_lock(join_mu_);
  if (thread_.joinable()) thread_.join();
}

DeadlineScheduler::Id DeadlineScheduler::schedule(SteadyTime when, std::function<void()> callback) {
  std::lock_guard lock(mu_);
  const Id id = next_id_++;
  if (stopping_) return id;
  const bool earliest = due_.empty() || when < due_.begin()->first.first;
  due_.emplace(std::make_pair(when, id), std::move(callback));
  when_.emplace(id, when);
  if (earliest) cv_.notify_all();
  return id;
}

bool DeadlineScheduler::cancel(Id id) {
  std::lock_guard lock(mu_);
  auto it = when_.find(id);
  if (it == when_.end()) return false;
  due_.erase({it->second, id});
  when_.erase(it);
  return true;
}

void DeadlineScheduler::run() {
  name_this_thread("deadlines");
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (due_.empty()) {
      cv_.wait(lock);
      continue;
    }
    auto first = due_.begin();
    // A copy: wait_until reads the time again after cancel() may have freed
    // the entry.
    const SteadyTime when = first->first.first;
    if (std::chrono::steady_clock::now() < when) {
      cv_.wait_until(lock, when);
      continue;
    }
    std::function<void()> callback = std::move(first->second);
    when_.erase(first->first.second);
    due_.erase(first);
    lock.unlock();  // a callback may schedule or cancel
    callback();
    lock.lock();
  }
}

size_t DeadlineScheduler::size() {
  std::lock_guard lock(mu_);
  return due_.size();
}

}  // namespace reprise::engine
