// Sticky queues: a worker that has a workflow cached gets its next tasks on
// its own queue with only the new events; if it does not start one in time,
// any worker gets it from the normal queue with full history.
#include "engine_fixture.hpp"

namespace reprise::engine {
namespace {

using StickyTest = EngineTest;

constexpr const char* kStickyQueue = "greetings/worker-1";

Status complete_sticky(EngineTest& t, const std::string& token) {
  v1::CompleteWorkflowTaskRequest r;
  r.set_task_token(token);
  r.mutable_sticky_attributes()->mutable_worker_task_queue()->set_name(kStickyQueue);
  return t.call(&Engine::complete_workflow_task, r).status();
}

TEST_F(StickyTest, TheNextTaskGoesToTheCachingWorkerWithOnlyNewEvents) {
  ASSERT_TRUE(start("sticky-1").is_ok());
  auto first = poll_workflow();
  ASSERT_TRUE(complete_sticky(*this, first.task_token()).is_ok());
  ASSERT_TRUE(poke("sticky-1").is_ok());

  EXPECT_TRUE(poll_workflow().task_token().empty()) << "not on the normal queue";
  auto next = poll_workflow(kStickyQueue);
  ASSERT_FALSE(next.task_token().empty());
  EXPECT_EQ(next.previous_started_event_id(), 3);
  ASSERT_EQ(next.history().events_size(), 4) << "completed, signaled, scheduled, started: events 4 to 7";
  EXPECT_EQ(next.history().events(0).event_id(), 4);
  EXPECT_EQ(next.history().events(1).event_type(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED);

  // Completing without sticky attributes ends stickiness.
  ASSERT_TRUE(complete(next.task_token(), {}).is_ok());
  ASSERT_TRUE(poke("sticky-1").is_ok());
  auto normal = poll_workflow();
  ASSERT_FALSE(normal.task_token().empty());
  EXPECT_EQ(normal.history().events(0).event_id(), 1) << "full history on the normal queue";
}

TEST_F(StickyTest, ATaskTheStickyWorkerDoesNotStartFallsBackToTheNormalQueue) {
  ASSERT_TRUE(start("sticky-2").is_ok());
  ASSERT_TRUE(complete_sticky(*this, poll_workflow().task_token()).is_ok());
  ASSERT_TRUE(poke("sticky-2").is_ok());
  const int64_t length_before = *describe_length("sticky-2");

  clock_.advance(5s);  // the sticky worker died: nobody polls its queue
  engine_->check_timers();
  auto task = poll_workflow();
  ASSERT_FALSE(task.task_token().empty()) << "moved to the normal queue";
  EXPECT_EQ(task.history().events(0).event_id(), 1) << "with full history";
  // The task's start is held in memory (docs/engine.md, "Tasks started in
  // memory"), so nothing is written yet.
  EXPECT_EQ(*describe_length("sticky-2"), length_before) << "the fallback itself writes no event";
  EXPECT_TRUE(poll_workflow(kStickyQueue).task_token().empty()) << "the sticky copy is stale";
}

// The fallback timer of a sticky task whose start is held in memory
// (docs/engine.md, "Tasks started in memory") finds the task started: the
// timer row is stale. It may be deleted only together with the held start:
// deleted alone, a crash (here: a restart, which commits no held start)
// loses the start, and the task, scheduled on a sticky queue that exists
// only in memory, has no row and no timer left to bring it back.
TEST_F(StickyTest, AFallbackTimerFoundStaleAgainstAHeldStartGoesOnlyWithThatStart) {
  restart([](EngineOptions& o) { o.max_held_start = 1h; });  // held until the task's own 10 s timeout
  ASSERT_TRUE(start("sticky-held").is_ok());
  ASSERT_TRUE(complete_sticky(*this, poll_workflow().task_token()).is_ok());
  ASSERT_TRUE(poke("sticky-held").is_ok());
  ASSERT_FALSE(poll_workflow(kStickyQueue).task_token().empty()) << "started on the sticky queue, held in memory";

  clock_.advance(6s);  // past the 5 s fallback, short of the 10 s start-to-close timeout
  engine_->check_timers();
  // The fallback fires and finds its task started (held): its row goes.
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (true) {
    auto due = store_->due_timers(clock_.now(), 10);
    ASSERT_TRUE(due.is_ok()) << due.status().to_string();
    if (due->empty()) break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the fallback timer did not fire";
    std::this_thread::sleep_for(10ms);
  }

  restart();  // the held start is lost, as in a crash
  clock_.advance(20s);
  engine_->check_timers();
  v1::PollWorkflowTaskResponse task;
  for (int i = 0; i < 10 && task.task_token().empty(); ++i) task = poll_workflow();
  EXPECT_FALSE(task.task_token().empty())
      << "the task was stranded: its fallback timer was deleted without the start it was stale against";
}

TEST_F(StickyTest, AFailedTaskEndsStickiness) {
  ASSERT_TRUE(start("sticky-3").is_ok());
  ASSERT_TRUE(complete_sticky(*this, poll_workflow().task_token()).is_ok());
  ASSERT_TRUE(poke("sticky-3").is_ok());
  auto sticky = poll_workflow(kStickyQueue);
  v1::FailWorkflowTaskRequest failed;
  failed.set_task_token(sticky.task_token());
  failed.mutable_failure()->set_message("cache lost");
  ASSERT_TRUE(call(&Engine::fail_workflow_task, failed).is_ok());
  clock_.advance(1s);  // the retry's backoff
  engine_->check_timers();
  auto retry = poll_workflow();
  ASSERT_FALSE(retry.task_token().empty()) << "the retry is on the normal queue";
  EXPECT_EQ(retry.history().events(0).event_id(), 1);
}

}  // namespace
}  // namespace reprise::engine
