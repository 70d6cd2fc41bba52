// Blob collection runs beside the timer loop, not in it: a timer that comes
// due while a collection is under way fires on time.
#include "gated_store.hpp"

namespace reprise::engine {
namespace {

class BlobGcTest : public GatedEngineTest {
 public:
  void TearDown() override {
    gate_->release_blob_collection();
    GatedEngineTest::TearDown();
  }
};

TEST_F(BlobGcTest, ATimerDueDuringABlobCollectionFiresOnTime) {
  gate_->hold_blob_collection();
  restart([](EngineOptions& o) { o.blob_gc_interval = std::chrono::seconds(0); });  // collect at once
  ASSERT_TRUE(gate_->wait_until_collecting(5s));

  // Commits go on meanwhile: a start and a task completion that sets a timer.
  ASSERT_TRUE(start("sleeper").is_ok());
  auto task = poll_workflow();
  ASSERT_FALSE(task.task_token().empty());
  v1::Command timer;
  timer.set_command_type(v1::COMMAND_TYPE_START_TIMER);
  timer.mutable_start_timer()->set_timer_id("nap");
  timer.mutable_start_timer()->mutable_start_to_fire_timeout()->set_seconds(1);
  ASSERT_TRUE(complete(task.task_token(), {timer}).is_ok());

  clock_.advance(1s);
  engine_->check_timers();
  const auto due = std::chrono::steady_clock::now();
  v1::PollWorkflowTaskResponse woken;
  while (woken.task_token().empty() && std::chrono::steady_clock::now() - due < 3s) woken = poll_workflow();
  ASSERT_FALSE(woken.task_token().empty()) << "the timer did not fire while the blob collection was under way";
  const auto late = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - due);
  EXPECT_LT(late, 1s);
  const auto& events = woken.history().events();
  EXPECT_EQ(events[events.size() - 3].event_type(), v1::EVENT_TYPE_TIMER_FIRED);
}

}  // namespace
}  // namespace reprise::engine
