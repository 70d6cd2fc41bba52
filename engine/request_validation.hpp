// The checks every request passes before the engine acts on it.
//
// They walk the whole message with protobuf reflection, so a field added to
// the schema tomorrow is checked too, and no handler has to remember a rule:
//   - an enum holds a value its type defines (an unknown number would be
//     stored, then break whoever names it);
//   - a Duration or Timestamp is in range, with nanos in [0, 1e9), so no
//     deadline arithmetic can overflow;
//   - identifiers (ids, names, request ids, identities) and tokens stay
//     within their limits;
//   - free text (failure messages, stack traces, reasons) is cut to its
//     limit with a marker, and a Failure's cause chain is cut at a depth
//     well below protobuf's parse limit, ending in a marker failure: a
//     worker reporting a real error must never be refused for its size, and
//     nothing stored may be too deep to read back.
// A refusal is INVALID_ARGUMENT naming the field's path, e.g.
// "commands[2].start_timer.start_to_fire_timeout.seconds ...".
//
// Thread safety: a pure function of its arguments.
#pragma once

#include <google/protobuf/message.h>

#include <cstddef>

#include "history/status.hpp"

namespace reprise::engine {

struct RequestLimits {
  size_t max_identifier_bytes = 1000;  // ids, names, identities, request ids
  size_t max_text_bytes = 32 * 1024;   // failure messages, stack traces, reasons
  size_t max_token_bytes = 4096;       // task and page tokens
  int max_failure_depth = 32;          // a Failure and its causes, counted from 1
  // Durations above this are refused (100 years): deadlines computed from
  // them stay far from int64 nanoseconds' end (year 2262).
  int64_t max_duration_seconds = 100LL * 366 * 24 * 3600;
};

// Checks `request` and cuts over-long text and failure chains in place.
Status validate_request(google::protobuf::Message& request, const RequestLimits& limits = {});

}  // namespace reprise::engine
