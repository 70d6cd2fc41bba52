// The workflows of waiting_test.cpp, whose histories recorded/waiting.cpp
// records from the real engine: several coroutines on one future, any()'s
// tie-break, all()'s failure, and signal waits that lose a race.
#pragma once

#include <optional>
#include <string>

#include "reprise/activity.hpp"
#include "reprise/workflow.hpp"

namespace reprise::recorded::waiting {

using namespace std::chrono_literals;

inline std::string charge(ActivityContext&, std::string order) { return order; }
inline constexpr Activity<&charge> charge_card{"charge"};
inline std::string ship(ActivityContext&, std::string order) { return order; }
inline constexpr Activity<&ship> ship_parcel{"ship"};
inline const auto kOptions = ActivityOptions::start_to_close(1min);
inline constexpr Signal<std::string> approval{"approval"};

// --- several waiters on one future ---

inline Task<std::string> wait_in_branch(TimerFuture timer) {
  co_await timer;
  co_return "branch";
}

inline Workflow<std::string> body_and_branch_on_one_timer(WorkflowContext& ctx) {
  auto timer = ctx.sleep(1min);
  auto branch = ctx.spawn(wait_in_branch(timer));
  co_await timer;
  co_return "body+" + co_await branch;
}
inline constexpr WorkflowDef<&body_and_branch_on_one_timer> shared_wf{"shared"};

// --- any()'s tie-break ---

inline Workflow<std::string> race_two_timers(WorkflowContext& ctx) {
  auto slow = ctx.sleep(2min);
  auto fast = ctx.sleep(1min);
  const size_t winner = co_await any(slow, fast);
  co_return winner == 0 ? "slow" : "fast";
}
inline constexpr WorkflowDef<&race_two_timers> race_wf{"race"};

// --- all()'s failure ---

inline Workflow<std::string> charge_and_ship(WorkflowContext& ctx) {
  auto charged = ctx.execute(charge_card, kOptions, std::string("o"));
  auto shipped = ctx.execute(ship_parcel, kOptions, std::string("o"));
  try {
    auto [receipt, tracking] = co_await all(charged, shipped);
    co_return receipt + "+" + tracking;
  } catch (const ActivityError& e) {
    co_return std::string("threw: ") + e.what();
  }
}
inline constexpr WorkflowDef<&charge_and_ship> all_wf{"all"};

// --- signal waits that lose ---

// Races a wait against a timer; a lost wait is simply dropped, not canceled.
inline Task<std::optional<std::string>> approval_or_timeout(WorkflowContext& ctx) {
  auto value = ctx.wait(approval);
  auto timer = ctx.sleep(1min);
  if (co_await any(value, timer) == 1) co_return std::nullopt;
  timer.cancel();
  co_return co_await value;
}

inline Workflow<std::string> any_then_wait(WorkflowContext& ctx) {
  std::optional<std::string> early = co_await approval_or_timeout(ctx);
  if (early) co_return "early " + *early;
  co_return "late " + co_await ctx.wait(approval);
}
inline constexpr WorkflowDef<&any_then_wait> any_then_wait_wf{"any_then_wait"};

inline Task<std::string> charge_and_approval(WorkflowContext& ctx) {
  auto charged = ctx.execute(charge_card, kOptions, std::string("o"));
  auto approved = ctx.wait(approval);
  auto [receipt, who] = co_await all(charged, approved);
  co_return receipt + " " + who;
}

inline Workflow<std::string> all_then_wait(WorkflowContext& ctx) {
  try {
    co_return co_await charge_and_approval(ctx);
  } catch (const ActivityError&) {
  }
  co_return "after failure " + co_await ctx.wait(approval);
}
inline constexpr WorkflowDef<&all_then_wait> all_then_wait_wf{"all_then_wait"};

inline Workflow<std::string> timeout_then_wait(WorkflowContext& ctx) {
  std::optional<std::string> early = co_await ctx.wait(approval, 1min);
  if (early) co_return "early " + *early;
  co_return "late " + co_await ctx.wait(approval);
}
inline constexpr WorkflowDef<&timeout_then_wait> timeout_then_wait_wf{"timeout_then_wait"};

// A value the losing wait held unread goes to a wait already waiting for
// the same signal (here a branch's), in history order, not to the buffer
// where that wait would never see it.
inline Task<std::string> two_approvals(WorkflowContext& ctx) {
  std::string first = co_await ctx.wait(approval);
  co_return first + " " + co_await ctx.wait(approval);
}

inline Workflow<std::string> lose_a_race_while_a_branch_waits(WorkflowContext& ctx) {
  std::optional<BranchFuture<std::string>> branch;
  {
    auto value = ctx.wait(approval);
    auto timer = ctx.sleep(1min);
    branch.emplace(ctx.spawn(two_approvals(ctx)));  // its first wait comes after `value`
    if (co_await any(value, timer) == 0) co_return "body " + co_await value;
  }  // `value` dropped unread
  co_return "branch " + co_await *branch;
}
inline constexpr WorkflowDef<&lose_a_race_while_a_branch_waits> handed_on_wf{"handed_on"};

}  // namespace reprise::recorded::waiting
