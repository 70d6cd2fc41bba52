// Conversions between protobuf Duration/Timestamp and std::chrono.
#pragma once

#include <google/protobuf/duration.pb.h>
#include <google/protobuf/timestamp.pb.h>

#include <chrono>

#include "history/clock.hpp"

namespace reprise {

inline std::chrono::nanoseconds to_nanos(const google::protobuf::Duration& d) {
  return std::chrono::seconds(d.seconds()) + std::chrono::nanoseconds(d.nanos());
}

inline void set_duration(google::protobuf::Duration* out, std::chrono::nanoseconds d) {
  out->set_seconds(d.count() / 1'000'000'000);
  out->set_nanos(static_cast<int32_t>(d.count() % 1'000'000'000));
}

inline TimePoint to_time(const google::protobuf::Timestamp& t) {
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
