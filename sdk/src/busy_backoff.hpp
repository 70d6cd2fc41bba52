// BusyBackoff: the pause before a request the server refused for now
// (Status::retryable(): RESOURCE_EXHAUSTED from back-pressure, or
// UNAVAILABLE from a shard moving between cluster nodes) is sent
// again — the same request, so the same request id. 20 ms, doubling up to
// 1 s, with jitter so refused callers do not come back in step.
//
// Thread safety: one per call, on the calling thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

namespace reprise::detail {

class BusyBackoff {
 public:
  explicit BusyBackoff(std::chrono::steady_clock::time_point deadline) : deadline_(deadline) {}

  // Sleeps before the next try; false (without sleeping) when the pause
  // would end past the deadline.
  bool wait() {
    thread_local std::minstd_rand jitter{std::random_device{}()};
    const auto pause = pause_ / 2 + std::chrono::milliseconds(jitter() % (pause_.count() / 2 + 1));
    if (std::chrono::steady_clock::now() + pause >= deadline_) return false;
    std::this_thread::sleep_for(pause);
    pause_ = std::min<std::chrono::milliseconds>(pause_ * 2, std::chrono::seconds(1));
    return true;
  }

 private:
  const std::chrono::steady_clock::time_point deadline_;
  std::chrono::milliseconds pause_{20};
};

}  // namespace reprise::detail
