// Executor: a fixed pool of plain threads running posted jobs in order of
// posting (jobs may still overlap across threads). The engine's work runs
// here, never on the store's writer thread or a caller's I/O thread.
//
// Its threads are named `name-0`, `name-1`, ... so profiles tell the pools
// apart (Linux keeps 15 characters of a name).
//
// Thread safety: post() from any thread, including from a job.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/task_runner.hpp"
#include "engine/thread_name.hpp"

namespace reprise::engine {

class Executor final : public TaskRunner {
 public:
  Executor(const std::string& name, int threads) {
    for (int i = 0; i < std::max(1, threads); ++i) {
      threads_.emplace_back([this] { run(); });
      name_thread(threads_.back(), name + "-" + std::to_string(i));
    }
  }
  // Runs every job already posted, then stops.
  ~Executor() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  void post(std::function<void()> job) override {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(job));
    cv_.notify_one();  // under the lock: post() is done with *this once it unlocks
  }

 private:
  void run() {
    while (true) {
      std::function<void()> job;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace reprise::engine
