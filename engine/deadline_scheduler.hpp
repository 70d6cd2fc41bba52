// DeadlineScheduler: runs callbacks at steady-clock deadlines on one thread.
// Long-polls use it to give up waiting without parking a thread each.
//
// Poll timeouts are about how long a caller waits on the wire, not about
// workflow time, so they use the steady clock rather than the injected Clock
// (which a test may stop or skip forward).
//
// Thread safety: all methods may be called from any thread, including from a
// callback. Callbacks run on the scheduler's thread and must not block.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

namespace reprise::engine {

class DeadlineScheduler {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;
  using Id = uint64_t;

  DeadlineScheduler();
  // Drops callbacks that have not run yet.
  ~DeadlineScheduler();
  // Drops callbacks that have not run yet and waits for a running one to
  // return; later schedule() calls are ignored. Idempotent; not from a
  // callback.
  void stop();
  DeadlineScheduler(const DeadlineScheduler&) = delete;
  DeadlineScheduler& operator=(const DeadlineScheduler&) = delete;

  Id schedule(SteadyTime when, std::function<void()> callback);
  // True if the callback was removed before it ran.
  bool cancel(Id id);
  // Callbacks waiting for their deadline.
  size_t size();

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
