// Small helpers the MutableState sources share.
#pragma once

#include <string>

#include "history/retry_policy.hpp"
#include "history/status.hpp"
#include "reprise/detail/proto_time.hpp"
#include "reprise/v1/common.pb.h"

namespace reprise::engine::state_util {

inline std::string token_error(const char* what) { return std::string("stale or unknown task token: ") + what; }

inline bool positive(const google::protobuf::Duration& d) { return to_nanos(d).count() > 0; }
inline bool negative(const google::protobuf::Duration& d) { return to_nanos(d).count() < 0; }

// What Temporal refuses in a retry policy (activities' and workflows'); `field`
// names the policy in the error ("retry_policy", "command 0 (…): retry_policy").
inline Status check_retry_policy(const v1::RetryPolicy& policy, const std::string& field) {
  if (negative(policy.initial_interval()))
    return Status::invalid_argument(field + ".initial_interval must not be negative");
  if (negative(policy.maximum_interval()))
    return Status::invalid_argument(field + ".maximum_interval must not be negative");
  // Written so that NaN fails too; 0 means unset (the default, 2.0).
  if (policy.backoff_coefficient() != 0 && !(policy.backoff_coefficient() >= 1.0)) {
    return Status::invalid_argument(field + ".backoff_coefficient must be at least 1 (or 0 for the default, 2)");
  }
  if (policy.maximum_attempts() < 0) return Status::invalid_argument(field + ".maximum_attempts must not be negative");
  if (positive(policy.maximum_interval()) &&
      to_nanos(policy.maximum_interval()) < to_nanos(policy.initial_interval())) {
    return Status::invalid_argument(field + ".maximum_interval must not be less than initial_interval");
  }
  return Status::ok();
}

}  // namespace reprise::engine::state_util
