// What a RetryPolicy decides, for everything that retries by one (the
// engine's activities and workflow runs, the worker's local activities):
// whether a failed attempt may be tried again, and after what backoff.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>

#include "reprise/detail/proto_time.hpp"
#include "reprise/v1/common.pb.h"

namespace reprise {

// Backoff before attempt `next_attempt` (2, 3, …) under `policy`: 1 s,
// doubling, at most 100 × the initial interval unless the policy says.
inline std::chrono::nanoseconds retry_backoff(const v1::RetryPolicy& policy, int next_attempt) {
  using std::chrono::nanoseconds;
  const auto positive = [](const google::protobuf::Duration& d) { return to_nanos(d).count() > 0; };
  const nanoseconds initial =
      positive(policy.initial_interval()) ? to_nanos(policy.initial_interval()) : nanoseconds(std::chrono::seconds(1));
  const double coefficient = policy.backoff_coefficient() >= 1.0 ? policy.backoff_coefficient() : 2.0;
  const nanoseconds maximum = positive(policy.maximum_interval()) ? to_nanos(policy.maximum_interval()) : initial * 100;
  const double scaled = static_cast<double>(initial.count()) * std::pow(coefficient, next_attempt - 2);
  return scaled >= static_cast<double>(maximum.count()) ? maximum : nanoseconds(static_cast<int64_t>(scaled));
}

// Whether `policy` lets attempt `attempt`, which failed with `failure`, be
// followed by another: not a non-retryable failure, not a listed type, not
// past maximum_attempts. Deadlines are the caller's to check.
inline bool policy_allows_retry(const v1::RetryPolicy& policy, const v1::Failure& failure, int attempt) {
  if (failure.non_retryable()) return false;
  if (policy.maximum_attempts() > 0 && attempt >= policy.maximum_attempts()) return false;
  const auto& types = policy.non_retryable_error_types();
  return failure.type().empty() || std::find(types.begin(), types.end(), failure.type()) == types.end();
}

}  // namespace reprise
