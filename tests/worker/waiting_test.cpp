// Waiting in workflow code: several coroutines on one future, any()'s
// tie-break, and signal waits that lose a race under each combinator (any,
// all, a wait with a timeout) without swallowing or losing a signal. Each
// runs live task by task, then replays the recorded history afresh.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "tests/worker/history_recorder.hpp"
#include "worker/workflow_instance.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

std::string charge(ActivityContext&, std::string order) { return order; }
inline constexpr Activity<&charge> charge_card{"charge"};
const auto kOptions = ActivityOptions::start_to_close(1min);
inline constexpr Signal<std::string> approval{"approval"};

template <auto Fn>
std::unique_ptr<worker::WorkflowInstance> fresh(const char* name) {
  auto instance = std::make_unique<worker::WorkflowInstance>(name, worker::make_starter<Fn>(name));
  instance->set_execution("wf-1", "run-1");
  return instance;
}

std::string result_of(const std::vector<v1::Command>& commands) {
  if (commands.empty() || !commands.back().has_complete_workflow_execution()) return "(not completed)";
  return from_payload<std::string>(commands.back().complete_workflow_execution().result().payloads(0), "result");
}

// Applies what `rec` holds beyond the instance and returns the commands.
std::vector<v1::Command> next_task(worker::WorkflowInstance& live, const Recorder& rec) {
  auto r = live.apply(rec.history_from(live.last_event_id() + 1));
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? r->commands : std::vector<v1::Command>{};
}

template <auto Fn>
std::string replayed_result(const char* name, const Recorder& rec) {
  auto instance = fresh<Fn>(name);
  auto r = instance->apply(rec.history());
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? result_of(r->commands) : "(replay failed)";
}

// --- several waiters on one future ---

Task<std::string> wait_in_branch(TimerFuture timer) {
  co_await timer;
  co_return "branch";
}

Workflow<std::string> body_and_branch_on_one_timer(WorkflowContext& ctx) {
  auto timer = ctx.sleep(1min);
  auto branch = ctx.spawn(wait_in_branch(timer));
  co_await timer;
  co_return "body+" + co_await branch;
}

TEST(Waiting, TheBodyAndABranchAwaitingTheSameTimerBothResume) {
  Recorder rec(to_payloads());
  auto live = fresh<&body_and_branch_on_one_timer>("shared");
  auto first = next_task(*live, rec);
  ASSERT_EQ(first.size(), 1u) << "one timer for both";
  rec.completed(first);
  rec.timer_fired();
  rec.task();
  EXPECT_EQ(result_of(next_task(*live, rec)), "body+branch") << "each waiter resumed (it hung before)";
  EXPECT_EQ(replayed_result<&body_and_branch_on_one_timer>("shared", rec), "body+branch");
}

// --- any()'s tie-break ---

Workflow<std::string> race_two_timers(WorkflowContext& ctx) {
  auto slow = ctx.sleep(2min);
  auto fast = ctx.sleep(1min);
  const size_t winner = co_await any(slow, fast);
  co_return winner == 0 ? "slow" : "fast";
}

TEST(Waiting, AnyGivesTheFutureHistoryResolvedFirstWhenSeveralAreReady) {
  Recorder rec(to_payloads());
  auto live = fresh<&race_two_timers>("race");
  auto first = next_task(*live, rec);
  ASSERT_EQ(first.size(), 2u);
  rec.completed(first);
  rec.timer_fired("2");  // the second argument's timer fired first ...
  rec.timer_fired("1");  // ... and both are in the same task
  rec.task();
  EXPECT_EQ(result_of(next_task(*live, rec)), "fast") << "history order, not argument order";
  EXPECT_EQ(replayed_result<&race_two_timers>("race", rec), "fast");
}

// --- all()'s failure ---

std::string ship(ActivityContext&, std::string order) { return order; }
inline constexpr Activity<&ship> ship_parcel{"ship"};

Workflow<std::string> charge_and_ship(WorkflowContext& ctx) {
  auto charged = ctx.execute(charge_card, kOptions, std::string("o"));
  auto shipped = ctx.execute(ship_parcel, kOptions, std::string("o"));
  try {
    auto [receipt, tracking] = co_await all(charged, shipped);
    co_return receipt + "+" + tracking;
  } catch (const ActivityError& e) {
    co_return std::string("threw: ") + e.what();
  }
}

// all() awaits its futures in argument order: a later argument's failure
// waits for the earlier ones, and when several failed, the earliest
// argument's failure is thrown, whatever order history recorded them in.
TEST(Waiting, AllThrowsTheFailureOfTheFirstArgumentThatFailed) {
  Recorder later(to_payloads());
  auto live = fresh<&charge_and_ship>("all");
  const auto first = next_task(*live, later);
  ASSERT_EQ(first.size(), 2u) << "both scheduled (events 5 and 6)";
  later.completed(first);
  later.activity_failed_at(6, "no such address");  // the ship fails while the charge runs
  later.task();
  const auto second = next_task(*live, later);
  EXPECT_TRUE(second.empty()) << "all() still waits for the charge";
  later.completed(second);
  later.activity_completed_at(5, to_payload(std::string("receipt")));
  later.task();
  EXPECT_EQ(result_of(next_task(*live, later)), "threw: activity 'ship' failed: no such address");
  EXPECT_EQ(replayed_result<&charge_and_ship>("all", later), "threw: activity 'ship' failed: no such address");

  Recorder both(to_payloads());
  auto live2 = fresh<&charge_and_ship>("all");
  both.completed(next_task(*live2, both));
  both.activity_failed_at(6, "no such address");  // history has the ship's failure first
  both.activity_failed_at(5, "card declined");
  both.task();
  EXPECT_EQ(result_of(next_task(*live2, both)), "threw: activity 'charge' failed: card declined");
  EXPECT_EQ(replayed_result<&charge_and_ship>("all", both), "threw: activity 'charge' failed: card declined");
}

// --- signal waits that lose ---

// Races a wait against a timer; a lost wait is simply dropped, not canceled.
Task<std::optional<std::string>> approval_or_timeout(WorkflowContext& ctx) {
  auto value = ctx.wait(approval);
  auto timer = ctx.sleep(1min);
  if (co_await any(value, timer) == 1) co_return std::nullopt;
  timer.cancel();
  co_return co_await value;
}

Workflow<std::string> any_then_wait(WorkflowContext& ctx) {
  std::optional<std::string> early = co_await approval_or_timeout(ctx);
  if (early) co_return "early " + *early;
  co_return "late " + co_await ctx.wait(approval);
}

Task<std::string> charge_and_approval(WorkflowContext& ctx) {
  auto charged = ctx.execute(charge_card, kOptions, std::string("o"));
  auto approved = ctx.wait(approval);
  auto [receipt, who] = co_await all(charged, approved);
  co_return receipt + " " + who;
}

Workflow<std::string> all_then_wait(WorkflowContext& ctx) {
  try {
    co_return co_await charge_and_approval(ctx);
  } catch (const ActivityError&) {
  }
  co_return "after failure " + co_await ctx.wait(approval);
}

Workflow<std::string> timeout_then_wait(WorkflowContext& ctx) {
  std::optional<std::string> early = co_await ctx.wait(approval, 1min);
  if (early) co_return "early " + *early;
  co_return "late " + co_await ctx.wait(approval);
}

// Task 1 issues the workflow's first commands, then `lose` records what
// makes the first wait lose, task 2 runs, a signal arrives, task 3 runs:
// the signal must reach the wait that is still alive.
template <auto Fn, typename Lose>
void signal_after_a_lost_wait(const char* name, Lose lose, const std::string& expected) {
  Recorder rec(to_payloads());
  auto live = fresh<Fn>(name);
  rec.completed(next_task(*live, rec));
  lose(rec);
  rec.task();
  const auto second = next_task(*live, rec);
  EXPECT_EQ(result_of(second), "(not completed)");
  rec.completed(second);
  rec.signaled("approval", to_payload(std::string("ana")));
  rec.task();
  EXPECT_EQ(result_of(next_task(*live, rec)), expected) << "the signal went to the wait that lost";
  EXPECT_EQ(replayed_result<Fn>(name, rec), expected);
}

TEST(SignalWaits, AWaitThatLostAnAnyDoesNotSwallowTheNextSignal) {
  signal_after_a_lost_wait<&any_then_wait>(
      "any", [](Recorder& rec) { rec.timer_fired(); }, "late ana");
}

TEST(SignalWaits, AWaitDroppedWhenAllFailedDoesNotSwallowTheNextSignal) {
  signal_after_a_lost_wait<&all_then_wait>(
      "all", [](Recorder& rec) { rec.activity_failed("declined"); }, "after failure ana");
}

TEST(SignalWaits, AWaitThatTimedOutDoesNotSwallowTheNextSignal) {
  signal_after_a_lost_wait<&timeout_then_wait>(
      "timeout", [](Recorder& rec) { rec.timer_fired(); }, "late ana");
}

// The timer fires and the signal arrives before the same task: the timer,
// first in history, wins; the value the losing wait holds unread goes back
// for the next wait, neither lost nor given twice.
template <auto Fn>
void signal_tied_with_the_timer(const char* name) {
  Recorder rec(to_payloads());
  auto live = fresh<Fn>(name);
  rec.completed(next_task(*live, rec));
  rec.timer_fired();
  rec.signaled("approval", to_payload(std::string("ana")));
  rec.task();
  const auto second = next_task(*live, rec);
  EXPECT_EQ(result_of(second), "late ana");
  EXPECT_EQ(second.size(), 1u) << "only the completion: no wait left to cancel, nothing issued twice";
  rec.completed(second);
  EXPECT_EQ(replayed_result<Fn>(name, rec), "(not completed)") << "the history ends closed: nothing new";
}

TEST(SignalWaits, AValueThatLostATieInAnyGoesToTheNextWait) { signal_tied_with_the_timer<&any_then_wait>("any"); }

TEST(SignalWaits, AValueThatLostATieWithTheTimeoutGoesToTheNextWait) {
  signal_tied_with_the_timer<&timeout_then_wait>("timeout");
}

// A value the losing wait held unread goes to a wait already waiting for
// the same signal (here a branch's), in history order, not to the buffer
// where that wait would never see it.
Task<std::string> two_approvals(WorkflowContext& ctx) {
  std::string first = co_await ctx.wait(approval);
  co_return first + " " + co_await ctx.wait(approval);
}

Workflow<std::string> lose_a_race_while_a_branch_waits(WorkflowContext& ctx) {
  std::optional<BranchFuture<std::string>> branch;
  {
    auto value = ctx.wait(approval);
    auto timer = ctx.sleep(1min);
    branch.emplace(ctx.spawn(two_approvals(ctx)));  // its first wait comes after `value`
    if (co_await any(value, timer) == 0) co_return "body " + co_await value;
  }  // `value` dropped unread
  co_return "branch " + co_await *branch;
}

TEST(SignalWaits, AValueThatLostATieGoesToAWaitAlreadyWaiting) {
  Recorder rec(to_payloads());
  auto live = fresh<&lose_a_race_while_a_branch_waits>("handed-on");
  rec.completed(next_task(*live, rec));
  rec.timer_fired();
  rec.signaled("approval", to_payload(std::string("ana")));
  rec.task();
  const auto second = next_task(*live, rec);
  EXPECT_EQ(result_of(second), "(not completed)") << "the branch waits for a second value";
  rec.completed(second);
  rec.signaled("approval", to_payload(std::string("bob")));
  rec.task();
  EXPECT_EQ(result_of(next_task(*live, rec)), "branch ana bob") << "each value once, in order (the branch hung before)";
  EXPECT_EQ(replayed_result<&lose_a_race_while_a_branch_waits>("handed-on", rec), "branch ana bob");
}

}  // namespace
}  // namespace reprise
