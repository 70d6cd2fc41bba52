#include "worker/machines/marker_machine.hpp"

#include "reprise/codec.hpp"
#include "worker/machines/nondeterminism.hpp"

namespace reprise::worker {

std::string marker_id(const google::protobuf::Map<std::string, v1::Payloads>& details) {
  auto it = details.find("id");
  if (it == details.end() || it->second.payloads_size() != 1) return "";
  try {
    return from_payload<std::string>(it->second.payloads(0), "a marker id");
  } catch (const PayloadError&) {
    return "";
  }
}

v1::Command marker_command(const char* name, const std::string& id) {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_RECORD_MARKER);
  c.mutable_record_marker()->set_marker_name(name);
  *(*c.mutable_record_marker()->mutable_details())["id"].add_payloads() = to_payload(id);
  return c;
}

void RecordedMarkers::note(const v1::History& events) {
  for (const v1::HistoryEvent& e : events.events()) {
    if (!e.has_marker_recorded()) continue;
    const auto& m = e.marker_recorded();
    auto id = m.details().find("id");
    if (id == m.details().end() || id->second.payloads_size() != 1) continue;
    try {
      const std::string key = from_payload<std::string>(id->second.payloads(0), "a marker id");
      if (m.marker_name() == kPatchMarker) {
        patches.insert(key);
      } else if (m.marker_name() == kSideEffectMarker) {
        auto data = m.details().find("data");
        if (data != m.details().end()) side_effects[std::stoll(key)] = data->second;
      } else if (m.marker_name() == kLocalActivityMarker) {
        local_activities[std::stoll(key)] = m;
      }
    } catch (const std::exception&) {
      // A marker some other code recorded: matching reports it if it matters.
    }
  }
}

MarkerMachine::MarkerMachine(v1::Command command) : CommandMachine(std::move(command), nullptr) {}

bool MarkerMachine::is_patch(const v1::HistoryEvent& e) {
  return e.has_marker_recorded() && e.marker_recorded().marker_name() == kPatchMarker;
}

const char* MarkerMachine::name(State s) {
  switch (s) {
    case State::kCommandCreated:
      return "command created";
    case State::kRecorded:
      return "recorded";
  }
  return "?";
}

bool MarkerMachine::matches(const v1::HistoryEvent& e) const {
  return state_ == State::kCommandCreated && e.has_marker_recorded() &&
         e.marker_recorded().marker_name() == command_.record_marker().marker_name() &&
         marker_id(e.marker_recorded().details()) == marker_id(command_.record_marker().details());
}

std::optional<NonDeterminism> MarkerMachine::apply(const v1::HistoryEvent& e, FutureResolver&) {
  const std::optional<State> to =
      e.has_marker_recorded() ? next_state(kTable, state_, Input::kMarkerRecorded) : std::nullopt;
  if (!to) return nondeterminism::refused(e, "marker '" + command_.record_marker().marker_name() + "'", name(state_));
  state_ = *to;
  return std::nullopt;
}

}  // namespace reprise::worker
