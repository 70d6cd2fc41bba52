// Small helpers the MutableState sources share.
#pragma once

#include <cmath>
#include <string>

#include "history/proto_time.hpp"
#include "reprise/v1/common.pb.h"

namespace reprise::engine::state_util {

inline std::string token_error(const char* what) { return std::string("stale or unknown task token: ") + what; }

inline bool positive(const google::protobuf::Duration& d) { return to_nanos(d).count() > 0; }
inline bool negative(const google::protobuf::Duration& d) { return to_nanos(d).count() < 0; }

// Backoff before attempt `next_attempt` (2, 3, …) under `policy`: 1 s,
// doubling, at most 100 × the initial interval unless the policy says.
inline std::chrono::nanoseconds retry_backoff(const v1::RetryPolicy& policy, int next_attempt) {
  using std::chrono::nanoseconds;
  const nanoseconds initial =
      positive(policy.initial_interval()) ? to_nanos(policy.initial_interval()) : nanoseconds(std::chrono::seconds(1));
  const double coefficient = policy.backoff_coefficient() >= 1.0 ? policy.backoff_coefficient() : 2.0;
  const nanoseconds maximum = positive(policy.maximum_interval()) ? to_nanos(policy.maximum_interval()) : initial * 100;
  const double scaled = static_cast<double>(initial.count()) * std::pow(coefficient, next_attempt - 2);
  return scaled >= static_cast<double>(maximum.count()) ? maximum : nanoseconds(static_cast<int64_t>(scaled));
}

}  // namespace reprise::engine::state_util
