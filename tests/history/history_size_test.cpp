#include "history/history_size.hpp"

#include <gtest/gtest.h>

#include "history/event_builder.hpp"

namespace reprise::history {
namespace {

TEST(HistorySize, RunningTotalEqualsSerializedHistory) {
  HistoryBuilder b(1, from_unix_nanos(1'700'000'000'000'000'000));
  auto* started = b.add(&v1::HistoryEvent::mutable_workflow_execution_started);
  started->mutable_workflow_type()->set_name("checkout");
  started->mutable_input()->add_payloads()->set_data(std::string(300, 'x'));  // multi-byte length prefix
  b.add(&v1::HistoryEvent::mutable_workflow_task_scheduled);
  b.add(&v1::HistoryEvent::mutable_activity_task_completed)
      ->mutable_result()
      ->add_payloads()
      ->set_data(std::string(70'000, 'y'));

  v1::History h;
  HistorySize size;
  for (const auto& e : b.events()) {
    *h.add_events() = e;
    size.add(e);
    EXPECT_EQ(size.bytes, static_cast<int64_t>(h.ByteSizeLong()));
  }
  EXPECT_EQ(size.events, 3);
}

TEST(HistoryLimits, LevelsAndMessages) {
  HistoryLimits limits{.warn_events = 10, .warn_bytes = 1000, .fail_events = 20, .fail_bytes = 2000};
  ASSERT_TRUE(limits.validate().is_ok());
  EXPECT_EQ(check_limits({10, 1000}, limits), LimitLevel::kOk);
  EXPECT_EQ(check_limits({11, 10}, limits), LimitLevel::kWarn);
  EXPECT_EQ(check_limits({1, 1001}, limits), LimitLevel::kWarn);
  EXPECT_EQ(check_limits({21, 10}, limits), LimitLevel::kFail);
  EXPECT_EQ(check_limits({1, 2001}, limits), LimitLevel::kFail);
  EXPECT_EQ(describe_limit({21, 10}, limits), "history has 21 events (limit 20)");
  EXPECT_EQ(describe_limit({1, 1500}, limits), "history has 1500 bytes (limit 1000)");
}

TEST(HistoryLimits, DefaultsFollowTemporal) {
  HistoryLimits d;
  EXPECT_EQ(d.warn_events, 10'240);
  EXPECT_EQ(d.fail_events, 51'200);
  EXPECT_EQ(d.warn_bytes, 10 << 20);
  EXPECT_EQ(d.fail_bytes, 50 << 20);
  EXPECT_TRUE(d.validate().is_ok());
}

TEST(HistoryLimits, RejectsNonsense) {
  EXPECT_EQ(HistoryLimits{.warn_events = 0}.validate().code(), StatusCode::kInvalidArgument);
  HistoryLimits inverted{.warn_events = 100, .fail_events = 50};
  EXPECT_EQ(inverted.validate().message(), "history warn limit of 100 events is above the fail limit of 50");
}

}  // namespace
}  // namespace reprise::history
