// Clock: the only way engine and worker code reads the time. Production code
// gets SystemClock; tests inject ManualClock and move time by hand, so nothing
// depends on how fast the machine is.
//
// Thread safety: both implementations may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "reprise/export.hpp"

namespace reprise {

using TimePoint = std::chrono::time_point<std::chrono::system_clock, std::chrono::nanoseconds>;

class REPRISE_EXPORT Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
};

class REPRISE_EXPORT SystemClock final : public Clock {
 public:
  TimePoint now() const override;
  // A process-wide instance for callers that were not handed a clock.
  static const SystemClock& instance();
};

class REPRISE_EXPORT ManualClock final : public Clock {
 public:
  explicit ManualClock(TimePoint start = TimePoint(std::chrono::seconds(1'700'000'000)))
      : ns_(start.time_since_epoch().count()) {}
  TimePoint now() const override { return TimePoint(std::chrono::nanoseconds(ns_.load())); }
  void set(TimePoint t) { ns_.store(t.time_since_epoch().count()); }
  void advance(std::chrono::nanoseconds d) { ns_.fetch_add(d.count()); }

 private:
  std::atomic<int64_t> ns_;
};

inline int64_t to_unix_nanos(TimePoint t) { return t.time_since_epoch().count(); }
inline TimePoint from_unix_nanos(int64_t ns) { return TimePoint(std::chrono::nanoseconds(ns)); }

}  // namespace reprise
