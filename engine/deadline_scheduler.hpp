// DeadlineScheduler: the production Deadlines (deadlines.hpp): runs
// callbacks at std::chrono::steady_clock deadlines on one thread, so
// long-polls give up waiting without parking a thread each.
//
// Thread safety: all methods may be called from any thread, including from a
// callback. Callbacks run on the scheduler's thread and must not block.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "engine/deadlines.hpp"

namespace reprise::engine {

class DeadlineScheduler final : public Deadlines {
 public:
  DeadlineScheduler();
  // Drops callbacks that have not run yet.
  ~DeadlineScheduler() override;
  // Also waits for a running callback to return.
  void stop() override;
  DeadlineScheduler(const DeadlineScheduler&) = delete;
  DeadlineScheduler& operator=(const DeadlineScheduler&) = delete;

  SteadyTime now() const override { return std::chrono::steady_clock::now(); }
  Id schedule(SteadyTime when, std::function<void()> callback) override;
  bool cancel(Id id) override;
  size_t size() override;

 private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<SteadyTime, Id>, std::function<void()>> due_;
  std::map<Id, SteadyTime> when_;
  Id next_id_ = 1;
  bool stopping_ = false;
  std::mutex join_mu_;
  std::thread thread_;
};

}  // namespace reprise::engine
