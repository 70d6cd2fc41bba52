// Waiting in workflow code: several coroutines on one future, any()'s
// tie-break, and signal waits that lose a race under each combinator (any,
// all, a wait with a timeout) without swallowing or losing a signal. Each
// replays the history the real engine wrote for the workflow
// (recorded/waiting.hpp, recorded by recorded/waiting.cpp), afresh and task
// by task, and must issue exactly the commands recorded for each task.
#include "tests/worker/recorded/waiting.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tests/worker/recorded_history.hpp"

namespace reprise {
namespace {

using namespace recorded::waiting;

// What came between task `n - 1`'s commands and task `n`'s start, its
// WorkflowTaskScheduled and WorkflowTaskStarted included.
std::vector<v1::EventType> events_before_task(const v1::History& h, int n) {
  const v1::History upto = recorded::through_task(h, n);
  std::vector<v1::EventType> out;
  for (int i = upto.events_size() - 1; i >= 0 && !upto.events(i).has_workflow_task_completed(); --i) {
    if (!recorded::made_by_a_command(upto.events(i))) out.insert(out.begin(), upto.events(i).event_type());
  }
  return out;
}

// --- several waiters on one future ---

TEST(Waiting, TheBodyAndABranchAwaitingTheSameTimerBothResume) {
  const v1::History h = recorded::replays_as_recorded(shared_wf, "shared", "waiting_shared");
  ASSERT_EQ(recorded::recorded_commands(h, 1).size(), 1u) << "one timer for both";
  EXPECT_EQ(recorded::completed_result(h), "body+branch") << "each waiter resumed (it hung before)";
}

// --- any()'s tie-break ---

TEST(Waiting, AnyGivesTheFutureHistoryResolvedFirstWhenSeveralAreReady) {
  const v1::History h = recorded::replays_as_recorded(race_wf, "race", "waiting_race");
  // Both timers fired before task 2, the second argument's (1 min) first.
  std::vector<std::string> fired;
  const v1::History second_task = recorded::through_task(h, 2);
  for (const auto& e : second_task.events()) {
    if (e.has_timer_fired()) fired.push_back(e.timer_fired().timer_id());
  }
  ASSERT_EQ(fired, (std::vector<std::string>{"2", "1"}));
  EXPECT_EQ(recorded::tasks_in(h), 2);
  EXPECT_EQ(recorded::completed_result(h), "fast") << "history order, not argument order";
}

// --- all()'s failure ---

// all() awaits its futures in argument order: a later argument's failure
// waits for the earlier ones, and when several failed, the earliest
// argument's failure is thrown, whatever order history recorded them in.
TEST(Waiting, AllThrowsTheFailureOfTheFirstArgumentThatFailed) {
  const v1::History later = recorded::replays_as_recorded(all_wf, "all-ship-fails", "waiting_all_ship_fails");
  ASSERT_EQ(recorded::recorded_commands(later, 1).size(), 2u) << "both scheduled (events 5 and 6)";
  ASSERT_EQ(recorded::tasks_in(later), 3) << "the ship failed while the charge ran";
  EXPECT_TRUE(recorded::recorded_commands(later, 2).empty()) << "all() still waits for the charge";
  EXPECT_EQ(recorded::completed_result(later), "threw: activity 'ship' failed: no such address");

  const v1::History both = recorded::replays_as_recorded(all_wf, "all-both-fail", "waiting_all_both_fail");
  std::vector<int64_t> failed;
  for (const auto& e : both.events()) {
    if (e.has_activity_task_failed()) failed.push_back(e.activity_task_failed().scheduled_event_id());
  }
  ASSERT_EQ(failed, (std::vector<int64_t>{6, 5})) << "history has the ship's failure first";
  EXPECT_EQ(recorded::completed_result(both), "threw: activity 'charge' failed: card declined");
}

// --- signal waits that lose ---

// Task 1 issued the workflow's first commands, then what made the first
// wait lose, task 2 ran, a signal arrived, task 3 ran: the signal must
// reach the wait that is still alive.
template <auto Fn>
void expect_signal_after_a_lost_wait(const WorkflowDef<Fn>& def, const std::string& id, const std::string& expected) {
  const v1::History h = recorded::replays_as_recorded(def, id, "waiting_" + id);
  ASSERT_EQ(recorded::tasks_in(h), 3);
  EXPECT_EQ(events_before_task(h, 3).front(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED);
  EXPECT_EQ(recorded::completed_result(h), expected) << "the signal went to the wait that lost";
}

TEST(SignalWaits, AWaitThatLostAnAnyDoesNotSwallowTheNextSignal) {
  expect_signal_after_a_lost_wait(any_then_wait_wf, "any-lost", "late ana");
}

TEST(SignalWaits, AWaitDroppedWhenAllFailedDoesNotSwallowTheNextSignal) {
  expect_signal_after_a_lost_wait(all_then_wait_wf, "all-lost", "after failure ana");
}

TEST(SignalWaits, AWaitThatTimedOutDoesNotSwallowTheNextSignal) {
  expect_signal_after_a_lost_wait(timeout_then_wait_wf, "timeout-lost", "late ana");
}

// The timer fired and the signal arrived before the same task: the timer,
// first in history, wins; the value the losing wait holds unread goes back
// for the next wait, neither lost nor given twice.
template <auto Fn>
void expect_signal_tied_with_the_timer(const WorkflowDef<Fn>& def, const std::string& id) {
  const v1::History h = recorded::replays_as_recorded(def, id, "waiting_" + id);
  ASSERT_EQ(recorded::tasks_in(h), 2);
  const std::vector<v1::EventType> before = events_before_task(h, 2);
  ASSERT_EQ(before.size(), 4u);
  EXPECT_EQ(before[0], v1::EVENT_TYPE_TIMER_FIRED);
  EXPECT_EQ(before[2], v1::EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED);
  EXPECT_EQ(recorded::completed_result(h), "late ana");
  EXPECT_EQ(recorded::recorded_commands(h, 2).size(), 1u)
      << "only the completion: no wait left to cancel, nothing issued twice";
}

TEST(SignalWaits, AValueThatLostATieInAnyGoesToTheNextWait) {
  expect_signal_tied_with_the_timer(any_then_wait_wf, "any-tied");
}

TEST(SignalWaits, AValueThatLostATieWithTheTimeoutGoesToTheNextWait) {
  expect_signal_tied_with_the_timer(timeout_then_wait_wf, "timeout-tied");
}

TEST(SignalWaits, AValueThatLostATieGoesToAWaitAlreadyWaiting) {
  const v1::History h = recorded::replays_as_recorded(handed_on_wf, "handed-on", "waiting_handed_on");
  ASSERT_EQ(recorded::tasks_in(h), 3);
  EXPECT_TRUE(recorded::recorded_commands(h, 2).empty()) << "the branch waits for a second value";
  EXPECT_EQ(recorded::completed_result(h), "branch ana bob") << "each value once, in order (the branch hung before)";
}

}  // namespace
}  // namespace reprise
