// StepRuntime: the engine's runtime (engine/engine_runtime.hpp) in the
// engine_requests harness. Every job the engine posts (executor, read pool,
// upload pool) waits in one first-in first-out queue, deadlines wait on a
// virtual steady clock, and the store's writer has no thread of its own
// (StoreOptions::writer_thread false): the harness's thread runs jobs,
// commits and deadlines one at a time. So an input runs the same way every
// time (a finding replays, and libFuzzer's coverage is not thread noise), an
// input starts and joins no engine thread, and a parked poll or query times
// out at once in virtual time instead of after real milliseconds.
//
// Thread safety: post(), schedule(), cancel(), size(), stop() and wake() from
// any thread (an engine call that blocks, shutdown() or sweep_retention(),
// runs on a helper thread while the harness's thread steps); run_one(),
// wait_for_job() and fire_next_deadline() from the harness's thread only.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <utility>

#include "engine/engine_runtime.hpp"
#include "engine/store/sqlite_store.hpp"

namespace reprise::fuzz {

class StepRuntime final : private engine::TaskRunner, private engine::Deadlines {
 public:
  StepRuntime() : runtime_{*this, *this, *this, *this} {}
  StepRuntime(const StepRuntime&) = delete;
  StepRuntime& operator=(const StepRuntime&) = delete;

  const engine::EngineRuntime& runtime() const { return runtime_; }
  // The store whose writer run_one() commits for; it outlives its use here.
  void commit_for(engine::SqliteStore* store) { store_ = store; }

  // Runs the oldest queued job, or else commits the writer's next batch;
  // false if neither was waiting.
  bool run_one() {
    std::function<void()> job;
    {
      std::lock_guard lock(mu_);
      if (!jobs_.empty()) {
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
    }
    if (job) {
      job();
      return true;
    }
    return store_ != nullptr && store_->commit_next_batch();
  }

  // Waits until a job is queued, wake() is called or `timeout` has passed
  // (a batch queued for the writer says nothing: run_one() finds it). For
  // the harness's thread while another thread is in an engine call that
  // blocks, instead of spinning on run_one(): under ASan and a busy machine
  // the spin took more CPU than the input.
  void wait_for_job(std::chrono::microseconds timeout) {
    std::unique_lock lock(mu_);
    job_or_wake_.wait_for(lock, timeout, [this] { return !jobs_.empty() || woken_; });
    woken_ = false;
  }
  void wake() {
    {
      std::lock_guard lock(mu_);
      woken_ = true;
    }
    job_or_wake_.notify_one();
  }

  // Moves the virtual clock to the earliest deadline and runs its callback;
  // false if none is waiting.
  bool fire_next_deadline() {
    std::function<void()> callback;
    {
      std::lock_guard lock(mu_);
      if (timed_.empty()) return false;
      auto first = timed_.begin();
      now_ = std::max(now_, first->first.first);
      callback = std::move(first->second);
      timed_.erase(first);
    }
    callback();
    return true;
  }

  // Virtual time since the runtime was made.
  std::chrono::nanoseconds elapsed() const {
    std::lock_guard lock(mu_);
    return now_ - kStart;
  }

 private:
  static constexpr SteadyTime kStart = SteadyTime(std::chrono::hours(1));

  void post(std::function<void()> job) override {
    {
      std::lock_guard lock(mu_);
      jobs_.push_back(std::move(job));
    }
    job_or_wake_.notify_one();
  }

  SteadyTime now() const override {
    std::lock_guard lock(mu_);
    return now_;
  }
  Id schedule(SteadyTime when, std::function<void()> callback) override {
    std::lock_guard lock(mu_);
    const Id id = next_id_++;
    if (!stopped_) timed_.emplace(std::make_pair(when, id), std::move(callback));
    return id;
  }
  bool cancel(Id id) override {
    std::lock_guard lock(mu_);
    for (auto it = timed_.begin(); it != timed_.end(); ++it) {
      if (it->first.second == id) {
        timed_.erase(it);
        return true;
      }
    }
    return false;
  }
  size_t size() override {
    std::lock_guard lock(mu_);
    return timed_.size();
  }
  void stop() override {
    std::lock_guard lock(mu_);
    stopped_ = true;
    timed_.clear();
  }

  mutable std::mutex mu_;
  std::condition_variable job_or_wake_;
  bool woken_ = false;
  std::deque<std::function<void()>> jobs_;
  // By deadline, then by when it was scheduled.
  std::map<std::pair<SteadyTime, Id>, std::function<void()>> timed_;
  SteadyTime now_ = kStart;
  Id next_id_ = 1;
  bool stopped_ = false;
  engine::SqliteStore* store_ = nullptr;
  engine::EngineRuntime runtime_;
};

}  // namespace reprise::fuzz
