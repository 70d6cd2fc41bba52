#include "history/event_builder.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

namespace reprise::history {
namespace {

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

// Every attributes field must map to the event type of the same name, and
// every event type must have its attributes field: the builder relies on it.
TEST(EventBuilder, EveryAttributesFieldMapsToItsEventTypeByName) {
  const auto* oneof = v1::HistoryEvent::descriptor()->FindOneofByName("attributes");
  ASSERT_NE(oneof, nullptr);
  const auto* types = v1::EventType_descriptor();
  EXPECT_EQ(oneof->field_count(), types->value_count() - 1);  // all but UNSPECIFIED
  for (int i = 0; i < oneof->field_count(); ++i) {
    const auto* field = oneof->field(i);
    const auto type = event_type_for(static_cast<v1::HistoryEvent::AttributesCase>(field->number()));
    EXPECT_EQ(v1::EventType_Name(type), "EVENT_TYPE_" + upper(field->name())) << field->name();
  }
}

TEST(EventBuilder, NumbersStampsAndTypesEvents) {
  const TimePoint t = from_unix_nanos(1'700'000'000'123'456'789);
  HistoryBuilder b(5, t);
  auto* timer = b.add(&v1::HistoryEvent::mutable_timer_started);
  timer->set_timer_id("t1");
  b.add(&v1::HistoryEvent::mutable_workflow_task_scheduled)->set_attempt(1);
  EXPECT_EQ(b.next_event_id(), 7);
  const auto events = b.take();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].event_id(), 5);
  EXPECT_EQ(events[0].event_type(), v1::EVENT_TYPE_TIMER_STARTED);
  EXPECT_EQ(events[0].timer_started().timer_id(), "t1");
  EXPECT_EQ(events[1].event_id(), 6);
  EXPECT_EQ(events[1].event_type(), v1::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED);
  EXPECT_EQ(event_time(events[1]), t);
}

TEST(EventBuilder, TimesBeforeTheEpochKeepNonNegativeNanos) {
  v1::HistoryEvent e;
  const TimePoint t = from_unix_nanos(-1'500'000'000);
  set_event_time(e, t);
  EXPECT_EQ(e.event_time().seconds(), -2);
  EXPECT_EQ(e.event_time().nanos(), 500'000'000);
  EXPECT_EQ(event_time(e), t);
}

TEST(EventBuilder, ReadableTypeNames) {
  EXPECT_EQ(event_type_name(v1::EVENT_TYPE_ACTIVITY_TASK_SCHEDULED), "ActivityTaskScheduled");
  EXPECT_EQ(event_type_name(v1::EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW), "WorkflowExecutionContinuedAsNew");
  EXPECT_EQ(event_type_for(v1::HistoryEvent::ATTRIBUTES_NOT_SET), v1::EVENT_TYPE_UNSPECIFIED);
}

}  // namespace
}  // namespace reprise::history
