// Building history events so that event ids, times and types are always right.
//
// HistoryEvent carries both `event_type` and a oneof of typed attributes; the
// two must agree. HistoryBuilder sets the type from the attributes, numbers
// events consecutively and stamps them with the transition's time, so callers
// only fill in attributes:
//
//   HistoryBuilder b(state.next_event_id, clock.now());
//   auto* timer = b.add(&v1::HistoryEvent::mutable_timer_started);
//   timer->set_timer_id("t1");
//
// Thread safety: none; a builder belongs to one transition.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reprise/clock.hpp"
#include "reprise/v1/history.pb.h"

namespace reprise::history {

namespace v1 = ::reprise::v1;

// The event type that goes with an attributes case of HistoryEvent. The oneof
// field numbers are the event type numbers plus a fixed offset (see
// history.proto); a unit test checks every pair by name.
v1::EventType event_type_for(v1::HistoryEvent::AttributesCase attributes);

// "ActivityTaskScheduled" for EVENT_TYPE_ACTIVITY_TASK_SCHEDULED.
std::string event_type_name(v1::EventType type);

// Sets event_time from a TimePoint.
void set_event_time(v1::HistoryEvent& event, TimePoint time);
TimePoint event_time(const v1::HistoryEvent& event);

class HistoryBuilder {
 public:
  HistoryBuilder(int64_t next_event_id, TimePoint time) : next_event_id_(next_event_id), time_(time) {}

  // Appends an event, fixing its id, time and type; returns its attributes for
  // the caller to fill in. The pointer stays valid until the next add().
  template <typename Attributes>
  Attributes* add(Attributes* (v1::HistoryEvent::*mutable_attributes)()) {
    v1::HistoryEvent& event = events_.emplace_back();
    event.set_event_id(next_event_id_++);
    set_event_time(event, time_);
    Attributes* attributes = (event.*mutable_attributes)();
    event.set_event_type(event_type_for(event.attributes_case()));
    return attributes;
  }

  // Appends an event whose attributes are already set, fixing its id, time
  // and type.
  v1::HistoryEvent& append(v1::HistoryEvent event) {
    event.set_event_id(next_event_id_++);
    set_event_time(event, time_);
    event.set_event_type(event_type_for(event.attributes_case()));
    return events_.emplace_back(std::move(event));
  }

  int64_t next_event_id() const { return next_event_id_; }
  bool empty() const { return events_.empty(); }
  const std::vector<v1::HistoryEvent>& events() const { return events_; }
  std::vector<v1::HistoryEvent> take() { return std::move(events_); }

 private:
  int64_t next_event_id_;
  TimePoint time_;
  std::vector<v1::HistoryEvent> events_;
};

}  // namespace reprise::history
