// Deadlines: callbacks at steady-time deadlines, and the steady time they are
// measured on. Long-polls, query timeouts and retry pauses wait here.
// DeadlineScheduler (a thread on std::chrono::steady_clock) is the production
// implementation; the deterministic simulator (tests/sim/) supplies one on
// its virtual clock, so a poll times out in virtual time.
//
// Poll timeouts are about how long a caller waits on the wire, not about
// workflow time, so they are apart from the engine's Clock (which a test may
// stop or skip forward).
//
// Thread safety: an implementation accepts every call from any thread its
// engine runs on, including from a callback. Callbacks must not block.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace reprise::engine {

class Deadlines {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;
  using Id = uint64_t;

  virtual ~Deadlines() = default;
  // The time deadlines are measured on.
  virtual SteadyTime now() const = 0;
  virtual Id schedule(SteadyTime when, std::function<void()> callback) = 0;
  // True if the callback was removed before it ran.
  virtual bool cancel(Id id) = 0;
  // Callbacks waiting for their deadline.
  virtual size_t size() = 0;
  // Drops callbacks that have not run yet; later schedule() calls are
  // ignored. Idempotent; not from a callback.
  virtual void stop() = 0;
};

}  // namespace reprise::engine
