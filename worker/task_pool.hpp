// TaskPool: a fixed set of plain threads running posted tasks. Pollers wait
// for a free thread before they ask the server for work, so the backlog
// stays on the server; they do not hold the thread while the poll waits
// (a long-poll can take a minute), so a task may find every thread busy and
// queue here, at most one per poller.
//
// Thread safety: all members may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace reprise::worker {

class TaskPool {
 public:
  explicit TaskPool(int threads) : threads_count_(threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
  }
  ~TaskPool() { join(); }
  TaskPool(const TaskPool&) = delete;

  // Blocks until a thread is free (true) or the pool is closing (false).
  bool wait_for_free_thread() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return busy_ < threads_count_ || closing_; });
    return !closing_;
  }
  void post(std::function<void()> task) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(task));
      ++busy_;
    }
    cv_.notify_all();
  }
  // Holds a thread for a task posted later with post_reserved(), or given
  // back with release_reserved(); false when closing, or when every thread
  // is busy and `may_queue` tasks already wait for one (0: only a free
  // thread will do).
  bool try_reserve(int may_queue = 0) {
    std::lock_guard lock(mu_);
    if (closing_ || busy_ >= threads_count_ + may_queue) return false;
    ++busy_;
    return true;
  }
  void post_reserved(std::function<void()> task) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(task));
    }
    cv_.notify_all();
  }
  void release_reserved() {
    {
      std::lock_guard lock(mu_);
      --busy_;
    }
    cv_.notify_all();
  }
  // Wakes waiting pollers to stop; posted tasks still run.
  void close() {
    {
      std::lock_guard lock(mu_);
      closing_ = true;
    }
    cv_.notify_all();
  }
  // Waits until no task runs or is queued, or `deadline`; true if idle.
  bool wait_idle_until(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mu_);
    return cv_.wait_until(lock, deadline, [this] { return busy_ == 0; });
  }
  // Runs what is queued, then ends the threads.
  void join() {
    close();
    {
      std::lock_guard lock(mu_);
      joining_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void run() {
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return !queue_.empty() || joining_; });
      if (queue_.empty()) return;
      std::function<void()> task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      task();
      lock.lock();
      --busy_;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  const int threads_count_;
  int busy_ = 0;  // tasks posted and not finished
  bool closing_ = false;
  bool joining_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace reprise::worker
