// The stackful workflows of stackful_test.cpp whose histories
// recorded/stackful.cpp records from the real engine, and a changed
// version (deep_v2) replayed against one of them.
#pragma once

#include <stdexcept>
#include <string>

#include "reprise/activity.hpp"
#include "reprise/stackful.hpp"
#include "reprise/workflow.hpp"

namespace reprise::recorded::stackful {

using namespace std::chrono_literals;

inline std::string charge(ActivityContext&, std::string order) { return order; }
inline std::string refund(ActivityContext&, std::string order) { return order; }
inline constexpr Activity<&charge> charge_card{"charge"};
inline constexpr Activity<&refund> refund_card{"refund"};
inline const auto kOptions = ActivityOptions::start_to_close(1min);

// Five plain calls down, the last one waits on an activity.
inline std::string level5(StackfulContext& ctx, const std::string& order) {
  return ctx.execute(charge_card, kOptions, order).get();
}
inline std::string level4(StackfulContext& ctx, const std::string& order) { return level5(ctx, order) + "4"; }
inline std::string level3(StackfulContext& ctx, const std::string& order) { return level4(ctx, order) + "3"; }
inline std::string level2(StackfulContext& ctx, const std::string& order) { return level3(ctx, order) + "2"; }
inline std::string level1(StackfulContext& ctx, const std::string& order) { return level2(ctx, order) + "1"; }

inline std::string deep(StackfulContext& ctx, std::string order) {
  std::string first = level1(ctx, order);
  ctx.sleep(1h);
  return first + "/" + level1(ctx, order + "-again");
}

// The same shape, but the second charge became a refund.
inline std::string deep_v2(StackfulContext& ctx, std::string order) {
  std::string first = level1(ctx, order);
  ctx.sleep(1h);
  return first + "/" + ctx.execute(refund_card, kOptions, order).get();
}

// An activity failure caught three calls down; the workflow then throws.
inline std::string charge_or_explain(StackfulContext& ctx, const std::string& order) {
  try {
    return ctx.execute(charge_card, kOptions, order).get();
  } catch (const ActivityError& e) {
    return std::string("declined: ") + e.what();
  }
}
inline std::string explained(StackfulContext& ctx, std::string order) {
  std::string outcome = charge_or_explain(ctx, order);
  if (outcome.rfind("declined", 0) == 0) throw ApplicationError("Declined", outcome, true);
  return outcome;
}

inline int64_t buggy(StackfulContext& ctx) {
  ctx.sleep(1s);
  throw std::out_of_range("index 7 of 3");
}

inline std::string charge_with_cleanup(StackfulContext& ctx, std::string order) {
  try {
    return ctx.execute(charge_card, kOptions, order).get();
  } catch (const CanceledError&) {
  }
  auto cleanup = ctx.non_cancellable();
  (void)cleanup.execute(refund_card, kOptions, order).get();
  throw CanceledError("checkout canceled after refund");
}

inline std::string two_branches(StackfulContext& ctx) {
  auto branch = [](std::string order) {
    return [order](StackfulContext& c) {
      // Separate statements: the operands of + may be evaluated in either order.
      std::string charged = c.execute(charge_card, kOptions, order).get();
      return charged + "/" + c.execute(refund_card, kOptions, order).get();
    };
  };
  auto a = ctx.spawn(branch("a"));
  auto b = ctx.spawn(branch("b"));
  return a.get() + " " + b.get();
}

inline std::string charge_within_a_minute(StackfulContext& ctx, std::string order) {
  auto charged = ctx.execute(charge_card, kOptions, order);
  auto deadline = ctx.timer(1min);
  if (ctx.any(charged, deadline) == 1) {
    charged.cancel();
    return "gave up";
  }
  deadline.cancel();
  return charged.get();
}

inline constexpr Signal<std::string> note{"note"};

// Tells another workflow, then asks it to cancel if it is this run's child.
inline std::string notify(StackfulContext& ctx, std::string who) {
  ctx.signal_external(who, note, std::string("hello")).get();
  try {
    ctx.cancel_external(ExternalWorkflow(who).child_workflow_only()).get();
  } catch (const ExternalWorkflowError& e) {
    return e.cause();
  }
  return "canceled";
}

inline constexpr WorkflowDef<&deep> deep_wf{"deep"};
inline constexpr WorkflowDef<&explained> explained_wf{"explained"};
inline constexpr WorkflowDef<&buggy> buggy_wf{"buggy"};
inline constexpr WorkflowDef<&charge_with_cleanup> cleanup_wf{"checkout"};
inline constexpr WorkflowDef<&two_branches> branches_wf{"branches"};
inline constexpr WorkflowDef<&charge_within_a_minute> race_wf{"race"};
inline constexpr WorkflowDef<&notify> notify_wf{"notify"};

}  // namespace reprise::recorded::stackful
