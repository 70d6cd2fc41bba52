// The workflows of workflow_features_test.cpp whose histories
// recorded/workflow_features.cpp records from the real engine, and the
// changed versions replayed against them.
#pragma once

#include <array>
#include <optional>
#include <stdexcept>
#include <string>

#include "reprise/activity.hpp"
#include "reprise/workflow.hpp"

namespace reprise::recorded::features {

using namespace std::chrono_literals;

inline std::string charge(ActivityContext&, std::string order) { return order; }
inline std::string refund(ActivityContext&, std::string order) { return order; }
inline constexpr Activity<&charge> charge_card{"charge"};
inline constexpr Activity<&refund> refund_card{"refund"};
inline const auto kOptions = ActivityOptions::start_to_close(1min);

// Charges; when canceled, refunds in a scope that is not canceled, then ends as canceled.
inline Workflow<std::string> charge_with_cleanup(WorkflowContext& ctx, std::string order) {
  try {
    co_return co_await ctx.execute(charge_card, kOptions, order);
  } catch (const CanceledError&) {
  }
  auto cleanup = ctx.non_cancellable();
  co_await cleanup.execute(refund_card, kOptions, order);
  throw CanceledError("checkout canceled after refund");
}
inline constexpr WorkflowDef<&charge_with_cleanup> cleanup_wf{"checkout"};

// Charges, but gives up after a minute and cancels the charge; cancels the
// timer when the charge wins.
inline Workflow<std::string> charge_within_a_minute(WorkflowContext& ctx, std::string order) {
  auto charged = ctx.execute(charge_card, kOptions, order);
  auto deadline = ctx.sleep(1min);
  if (co_await any(charged, deadline) == 1) {
    charged.cancel();
    co_return "gave up";
  }
  deadline.cancel();
  co_return co_await charged;
}
inline constexpr WorkflowDef<&charge_within_a_minute> within_a_minute_wf{"checkout"};

// Catches the cancel, then tries to charge anyway.
inline Workflow<std::string> keeps_going(WorkflowContext& ctx) {
  try {
    co_await ctx.sleep(1h);
  } catch (const CanceledError&) {
  }
  auto charged = ctx.execute(charge_card, kOptions, std::string("late"));
  try {
    co_await charged;
  } catch (const CanceledError& e) {
    co_return std::string(e.what());
  }
  co_return "charged";
}
inline constexpr WorkflowDef<&keeps_going> keeps_going_wf{"keeps_going"};

inline constexpr Signal<std::string> approval{"approval"};

inline Workflow<std::string> approve_within_a_day(WorkflowContext& ctx) {
  std::optional<std::string> who = co_await ctx.wait(approval, 24h);
  co_return who ? "approved by " + *who : "timed out";
}
inline constexpr WorkflowDef<&approve_within_a_day> approve_wf{"approve"};

// Squares, except 2 (a child that fails).
inline Workflow<int64_t> square(WorkflowContext&, int64_t n) {
  if (n == 2) throw ApplicationError("Forbidden", "square of 2 is not allowed", true);
  co_return n* n;
}
inline constexpr WorkflowDef<&square> square_wf{"square"};

inline Workflow<int64_t> sum_of_squares(WorkflowContext& ctx, int64_t n) {
  int64_t sum = 0;
  for (int64_t i = 1; i <= n; ++i) sum += co_await ctx.execute_child(square_wf, ChildWorkflowOptions(), i);
  co_return sum;
}
inline constexpr WorkflowDef<&sum_of_squares> sum_wf{"sum"};

// A child that waits for a signal nobody sends, so it ends only when it is
// canceled, terminated or times out (after an hour, as its parent starts it).
inline constexpr Signal<std::string> go_ahead{"go_ahead"};
inline Workflow<std::string> wait_for_go_ahead(WorkflowContext& ctx) { co_return co_await ctx.wait(go_ahead); }
inline constexpr WorkflowDef<&wait_for_go_ahead> go_ahead_child_wf{"wait_for_go_ahead"};
inline Workflow<std::string> await_go_ahead_child(WorkflowContext& ctx) {
  co_return co_await ctx.execute_child(go_ahead_child_wf, ChildWorkflowOptions().run_timeout(1h));
}
inline constexpr WorkflowDef<&await_go_ahead_child> go_ahead_parent_wf{"await_go_ahead"};

inline Workflow<int64_t> counter(WorkflowContext& ctx, int64_t n);
inline constexpr WorkflowDef<&counter> counter_wf{"counter"};
inline Workflow<int64_t> counter(WorkflowContext& ctx, int64_t n) {
  co_await ctx.sleep(1s);
  if (n < 100) co_await ctx.continue_as_new(counter_wf, n + 1);
  co_return n;
}

// How many times with_side_effect's side effect was computed, in this process.
inline int side_effect_calls = 0;
inline Workflow<std::string> with_side_effect(WorkflowContext& ctx) {
  const std::string token = ctx.side_effect([] { return "token-" + std::to_string(++side_effect_calls); });
  co_await ctx.sleep(1s);
  co_return token;
}
inline constexpr WorkflowDef<&with_side_effect> token_wf{"token"};

// Version 2 of a workflow: added a fee step behind a patch.
inline Workflow<std::string> fee_v2(WorkflowContext& ctx, std::string order) {
  if (ctx.patched("add-fee")) co_await ctx.execute(charge_card, kOptions, std::string("fee"));
  co_return co_await ctx.execute(charge_card, kOptions, order);
}
inline constexpr WorkflowDef<&fee_v2> fee_v2_wf{"fee"};
// Version 1, before the patch.
inline Workflow<std::string> fee_v1(WorkflowContext& ctx, std::string order) {
  co_return co_await ctx.execute(charge_card, kOptions, order);
}
inline constexpr WorkflowDef<&fee_v1> fee_v1_wf{"fee"};

inline Task<std::string> charge_then_refund(WorkflowContext& ctx, std::string order) {
  std::string charged = co_await ctx.execute(charge_card, kOptions, order);
  co_return charged + "/" + co_await ctx.execute(refund_card, kOptions, order);
}
inline Workflow<std::string> two_branches(WorkflowContext& ctx) {
  auto a = ctx.spawn(charge_then_refund(ctx, "a"));
  auto b = ctx.spawn(charge_then_refund(ctx, "b"));
  std::string first = co_await a;
  co_return first + " " + co_await b;
}
inline constexpr WorkflowDef<&two_branches> branches_wf{"branches"};

inline constexpr Signal<int64_t> bump{"bump"};

// Signals a workflow that is not its child and lets the error escape.
inline Workflow<int64_t> signal_nobody(WorkflowContext& ctx) {
  co_await ctx.signal_external(ExternalWorkflow("nobody").child_workflow_only(), bump, 1);
  co_return 0;
}
inline constexpr WorkflowDef<&signal_nobody> signal_nobody_wf{"signal_nobody"};

// Being canceled, it still tells a partner, through a non-cancellable
// context; the same request through the canceled context is never sent.
// Woken by a signal it does not wait for: a task with nothing to do.
inline constexpr Signal<std::string> nudge{"nudge"};

// Bumps a counter in another workflow, then asks a workflow that is gone to
// cancel; says how each went.
inline Workflow<std::string> coordinator(WorkflowContext& ctx) {
  co_await ctx.signal_external("counter-7", bump, 5);
  std::string out = "signaled";
  try {
    co_await ctx.cancel_external({"gone", "r-1"}, "no longer needed");
    out += ", canceled";
  } catch (const ExternalWorkflowError& e) {
    out += std::string(", ") + e.what() + " [" + e.cause() + " " + e.workflow_id() + "]";
  }
  co_return out;
}
inline constexpr WorkflowDef<&coordinator> coordinator_wf{"coordinator"};

inline Workflow<std::string> tell_partner_on_cancel(WorkflowContext& ctx) {
  try {
    co_await ctx.sleep(1h);
  } catch (const CanceledError&) {
  }
  std::string out;
  try {
    co_await ctx.signal_external("partner", bump, 1);
  } catch (const CanceledError& e) {
    out = e.what();
  }
  auto cleanup = ctx.non_cancellable();
  co_await cleanup.cancel_external("partner");
  co_return out;
}
inline constexpr WorkflowDef<&tell_partner_on_cancel> tell_wf{"tell"};

inline Workflow<int64_t> buggy(WorkflowContext& ctx) {
  co_await ctx.sleep(1s);
  throw std::out_of_range("index 7 of 3");
}
inline constexpr WorkflowDef<&buggy> buggy_wf{"buggy"};

// Keeps 100 KB of state in its frame while it waits.
inline Workflow<int64_t> big_frame(WorkflowContext& ctx) {
  std::array<char, 100'000> scratch{};
  scratch[7] = 1;
  co_await ctx.sleep(1s);
  co_return scratch[7];
}
inline constexpr WorkflowDef<&big_frame> big_frame_wf{"big_frame"};

}  // namespace reprise::recorded::features
