// Conversions between protobuf Duration/Timestamp and std::chrono.
#pragma once

#include <google/protobuf/duration.pb.h>
#include <google/protobuf/timestamp.pb.h>

#include <chrono>
#include <limits>

#include "reprise/clock.hpp"

namespace reprise {

// Saturates instead of overflowing: requests are range-checked on the way
// in (engine/request_validation.hpp), but a record written before that check
// existed must still give a sane (if distant) deadline.
inline std::chrono::nanoseconds to_nanos(const google::protobuf::Duration& d) {
  constexpr int64_t kMaxSeconds = std::numeric_limits<int64_t>::max() / 1'000'000'000 - 1;
  if (d.seconds() > kMaxSeconds) return std::chrono::nanoseconds::max() / 2;
  if (d.seconds() < -kMaxSeconds) return std::chrono::nanoseconds::min() / 2;
  return std::chrono::seconds(d.seconds()) + std::chrono::nanoseconds(d.nanos());
}

inline void set_duration(google::protobuf::Duration* out, std::chrono::nanoseconds d) {
  out->set_seconds(d.count() / 1'000'000'000);
  out->set_nanos(static_cast<int32_t>(d.count() % 1'000'000'000));
}

inline TimePoint to_time(const google::protobuf::Timestamp& t) {
  constexpr int64_t kMaxSeconds = std::numeric_limits<int64_t>::max() / 1'000'000'000 - 1;
  if (t.seconds() > kMaxSeconds) return from_unix_nanos(std::numeric_limits<int64_t>::max() / 2);
  if (t.seconds() < -kMaxSeconds) return from_unix_nanos(std::numeric_limits<int64_t>::min() / 2);
  return from_unix_nanos(t.seconds() * 1'000'000'000 + t.nanos());
}

inline void set_time(google::protobuf::Timestamp* out, TimePoint t) {
  int64_t ns = to_unix_nanos(t);
  int64_t s = ns / 1'000'000'000;
  int64_t n = ns % 1'000'000'000;
  if (n < 0) {
    n += 1'000'000'000;
    s -= 1;
  }
  out->set_seconds(s);
  out->set_nanos(static_cast<int32_t>(n));
}

}  // namespace reprise
