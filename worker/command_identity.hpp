// What makes a command the code issued and the event history recorded for
// it the same thing: an identity string each maps to.
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

// A marker's id detail (a side effect's sequence number, a patch's id), or
// "" when it has none.
std::string marker_id(const google::protobuf::Map<std::string, v1::Payloads>& details);

}  // namespace reprise::worker
