// Exact accounting of history size, and the limits that keep histories small
// enough to replay.
//
// `bytes` is the serialized size the events occupy inside a v1::History
// message (each event's bytes plus its field tag and length prefix), so the
// running total equals History::ByteSizeLong() of the same events exactly.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "history/status.hpp"
#include "reprise/v1/history.pb.h"

namespace reprise::history {

namespace v1 = ::reprise::v1;

// Bytes `event` adds to a serialized v1::History.
int64_t event_bytes(const v1::HistoryEvent& event);

struct HistorySize {
  int64_t events = 0;
  int64_t bytes = 0;

  void add(const v1::HistoryEvent& event) {
    events += 1;
    bytes += event_bytes(event);
  }
  void add(std::span<const v1::HistoryEvent> events_to_add) {
    for (const auto& e : events_to_add) add(e);
  }
  HistorySize& operator+=(const HistorySize& other) {
    events += other.events;
    bytes += other.bytes;
    return *this;
  }
  friend bool operator==(const HistorySize&, const HistorySize&) = default;
};

// Defaults follow Temporal's: warn at 10,240 events or 10 MiB, fail the
// execution at 51,200 events or 50 MiB.
struct HistoryLimits {
  int64_t warn_events = 10'240;
  int64_t warn_bytes = 10ll << 20;
  int64_t fail_events = 51'200;
  int64_t fail_bytes = 50ll << 20;

  // Every limit positive and each warn level below its fail level.
  Status validate() const;
};

enum class LimitLevel { kOk, kWarn, kFail };

LimitLevel check_limits(const HistorySize& size, const HistoryLimits& limits);

// "history has 51,300 events (limit 51,200)" — the reason written into the
// terminal event or log line, naming whichever limit was crossed.
std::string describe_limit(const HistorySize& size, const HistoryLimits& limits);

}  // namespace reprise::history
