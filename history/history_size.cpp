#include "history/history_size.hpp"

#include <google/protobuf/io/coded_stream.h>

namespace reprise::history {

int64_t event_bytes(const v1::HistoryEvent& event) {
  const size_t body = event.ByteSizeLong();
  // History.events is field 1, length-delimited: a one-byte tag plus a varint length.
  return static_cast<int64_t>(1 + google::protobuf::io::CodedOutputStream::VarintSize64(body) + body);
}

Status HistoryLimits::validate() const {
  if (warn_events <= 0 || warn_bytes <= 0 || fail_events <= 0 || fail_bytes <= 0) {
    return Status::invalid_argument("history limits must be positive");
  }
  if (warn_events > fail_events) {
    return Status::invalid_argument("history warn limit of " + std::to_string(warn_events) +
                                    " events is above the fail limit of " + std::to_string(fail_events));
  }
  if (warn_bytes > fail_bytes) {
    return Status::invalid_argument("history warn limit of " + std::to_string(warn_bytes) +
                                    " bytes is above the fail limit of " + std::to_string(fail_bytes));
  }
  return Status::ok();
}

LimitLevel check_limits(const HistorySize& size, const HistoryLimits& limits) {
  if (size.events > limits.fail_events || size.bytes > limits.fail_bytes) return LimitLevel::kFail;
  if (size.events > limits.warn_events || size.bytes > limits.warn_bytes) return LimitLevel::kWarn;
  return LimitLevel::kOk;
}

std::string describe_limit(const HistorySize& size, const HistoryLimits& limits) {
  const bool failing = check_limits(size, limits) == LimitLevel::kFail;
  const int64_t event_limit = failing ? limits.fail_events : limits.warn_events;
  const int64_t byte_limit = failing ? limits.fail_bytes : limits.warn_bytes;
  if (size.events > event_limit) {
    return "history has " + std::to_string(size.events) + " events (limit " + std::to_string(event_limit) + ")";
  }
  if (size.bytes > byte_limit) {
    return "history has " + std::to_string(size.bytes) + " bytes (limit " + std::to_string(byte_limit) + ")";
  }
  return "history is within its limits";
}

}  // namespace reprise::history
