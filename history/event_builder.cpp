#include "history/event_builder.hpp"

#include <cctype>

#include "reprise/detail/proto_time.hpp"

namespace reprise::history {

namespace {
// HistoryEvent's attributes oneof starts at field 10 with event type 1.
constexpr int kAttributesFieldOffset = 9;
}  // namespace

v1::EventType event_type_for(v1::HistoryEvent::AttributesCase attributes) {
  if (attributes == v1::HistoryEvent::ATTRIBUTES_NOT_SET) return v1::EVENT_TYPE_UNSPECIFIED;
  const int type = static_cast<int>(attributes) - kAttributesFieldOffset;
  return v1::EventType_IsValid(type) ? static_cast<v1::EventType>(type) : v1::EVENT_TYPE_UNSPECIFIED;
}

std::string event_type_name(v1::EventType type) {
  const std::string& full = v1::EventType_Name(type);  // EVENT_TYPE_TIMER_FIRED
  constexpr std::string_view kPrefix = "EVENT_TYPE_";
  std::string name;
  bool upper = true;
  for (size_t i = full.rfind(kPrefix, 0) == 0 ? kPrefix.size() : 0; i < full.size(); ++i) {
    const char c = full[i];
    if (c == '_') {
      upper = true;
      continue;
    }
    name += upper ? c : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    upper = false;
  }
  return name.empty() ? "Unknown" : name;
}

void set_event_time(v1::HistoryEvent& event, TimePoint time) { set_time(event.mutable_event_time(), time); }

TimePoint event_time(const v1::HistoryEvent& event) { return to_time(event.event_time()); }

}  // namespace reprise::history
