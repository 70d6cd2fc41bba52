// What makes a command the code issued and the event history recorded for
// it the same thing: an identity string each maps to, and a description of
// each for non-determinism messages.
#pragma once

#include <optional>
#include <string>

#include "reprise/v1/command.pb.h"
#include "reprise/v1/history.pb.h"

namespace reprise::worker {

// Marker names the SDK records.
inline constexpr const char* kSideEffectMarker = "side_effect";
inline constexpr const char* kPatchMarker = "patch";

// e.g. "activity 3 charge", "timer 2", "cancel-activity 5", "complete".
std::string identity_of(const v1::Command& c);
// The identity of the command `e` records, or nullopt for an event no
// command causes (an activity completing, a signal arriving).
std::optional<std::string> identity_of(const v1::HistoryEvent& e);

// e.g. "ScheduleActivityTask 'charge' (activity id 1)".
std::string describe(const v1::Command& c);
// e.g. "ActivityTaskScheduled 'charge' (activity id 1)".
std::string describe(const v1::HistoryEvent& e);

}  // namespace reprise::worker
