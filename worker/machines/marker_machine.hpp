// MarkerMachine: a marker the SDK records for the code — a side effect's
// value (side_effect) or a change the code made (patched) — from its
// RecordMarker command to MarkerRecorded. Nothing waits on it. Also what
// replay reads back from markers: side-effect values, patch ids and the
// outcomes of local activities (whose own machine is LocalActivityMachine).
#pragma once

#include <map>
#include <set>
#include <string>

#include "worker/machines/command_machine.hpp"

namespace reprise::worker {

// Marker names the SDK records.
inline constexpr const char* kSideEffectMarker = "side_effect";
inline constexpr const char* kPatchMarker = "patch";
inline constexpr const char* kLocalActivityMarker = "local_activity";  // local_activity_machine.hpp

// A marker's id detail (a side effect's sequence number, a patch's id), or
// "" when it has none.
std::string marker_id(const google::protobuf::Map<std::string, v1::Payloads>& details);

// A RecordMarker command for marker `name` with id `id`.
v1::Command marker_command(const char* name, const std::string& id);

// Side-effect values, patch ids and local-activity outcomes recorded by the
// markers of a history, for the replayed activations that ask for them.
struct RecordedMarkers {
  std::map<int64_t, v1::Payloads> side_effects;  // by sequence number
  std::set<std::string> patches;
  // By sequence number; each names the task whose completion recorded it
  // (workflow_task_completed_event_id), the activation it resolves in.
  std::map<int64_t, v1::MarkerRecordedEventAttributes> local_activities;

  void note(const v1::History& events);
};

class MarkerMachine final : public CommandMachine {
 public:
  enum class State { kCommandCreated, kRecorded };
  enum class Input { kMarkerRecorded };

  static constexpr std::array<Transition<State, Input>, 1> kTable = {{
      {State::kCommandCreated, Input::kMarkerRecorded, State::kRecorded},
  }};

  // `command` is a RecordMarker.
  explicit MarkerMachine(v1::Command command);

  // Whether `e` records a patch. One the code no longer asks about (its
  // patched() call is gone, the change kept) matches no command and is
  // passed over.
  static bool is_patch(const v1::HistoryEvent& e);

  State state() const { return state_; }
  static const char* name(State s);

  bool matches(const v1::HistoryEvent& e) const override;
  std::optional<NonDeterminism> apply(const v1::HistoryEvent& e, FutureResolver& futures) override;

 private:
  State state_ = State::kCommandCreated;
};

}  // namespace reprise::worker
