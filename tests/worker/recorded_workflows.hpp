// The workflows whose histories tests/worker/histories/ holds, as the real
// engine wrote them: record_histories.cpp runs each scenario below against
// an embedded engine and exports its history; workflow_instance_test.cpp
// replays the files through WorkflowInstance. Changing a workflow here
// means recording the histories again (docs/testing.md, "Recorded
// histories").
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

#include "reprise/activity.hpp"
#include "reprise/workflow.hpp"

namespace reprise::recorded {

using namespace std::chrono_literals;

struct Order {
  std::string id;
  int64_t cents = 0;
  MSGPACK_DEFINE_MAP(id, cents);
};

// What the activities do is up to the recorder (record_histories.cpp);
// replay never calls an activity.
inline std::function<std::string(ActivityContext&, Order)> charge_does;
inline std::function<std::string(ActivityContext&, std::string)> ship_does;
inline std::string charge(ActivityContext& ctx, Order order) {
  if (!charge_does) throw std::logic_error("charge runs only in the recorder");
  return charge_does(ctx, std::move(order));
}
inline std::string ship(ActivityContext& ctx, std::string order) {
  if (!ship_does) throw std::logic_error("ship runs only in the recorder");
  return ship_does(ctx, std::move(order));
}
inline constexpr Activity<&charge> charge_card{"charge"};
inline constexpr Activity<&ship> ship_parcel{"ship"};

inline Workflow<std::string> checkout(WorkflowContext& ctx, Order order) {
  std::string receipt = co_await ctx.execute(charge_card, ActivityOptions::start_to_close(30s), order);
  co_await ctx.sleep(1h);
  co_return receipt + " for " + order.id;
}
inline constexpr WorkflowDef<&checkout> checkout_wf{"checkout"};

// The same workflow after someone swapped the activities around.
inline Workflow<std::string> checkout_v2(WorkflowContext& ctx, Order order) {
  std::string tracking = co_await ctx.execute(ship_parcel, ActivityOptions::start_to_close(30s), order.id);
  co_return tracking;
}
inline constexpr WorkflowDef<&checkout_v2> checkout_v2_wf{"checkout"};

// Checkout after someone made it wait for an approval first.
inline constexpr Signal<std::string> approval{"approval"};
inline Workflow<std::string> awaits_approval(WorkflowContext& ctx, Order order) {
  co_return co_await ctx.wait(approval) + " for " + order.id;
}
inline constexpr WorkflowDef<&awaits_approval> awaits_approval_wf{"checkout"};

// Races the charge against a one-minute timeout.
inline Workflow<std::string> charge_or_give_up(WorkflowContext& ctx, Order order) {
  auto charged = ctx.execute(charge_card, ActivityOptions::start_to_close(5min), order);
  auto deadline = ctx.sleep(1min);
  if (co_await any(charged, deadline) == 1) co_return "gave up";
  co_return co_await charged;
}
inline constexpr WorkflowDef<&charge_or_give_up> charge_or_give_up_wf{"charge_or_give_up"};

// Charges and ships at the same time. Scheduled in two statements: the order
// of a call's arguments is up to the compiler, the order of statements is not.
inline Workflow<std::string> both(WorkflowContext& ctx, Order order) {
  auto charged = ctx.execute(charge_card, ActivityOptions::start_to_close(5min), order);
  auto shipped = ctx.execute(ship_parcel, ActivityOptions::start_to_close(5min), order.id);
  auto [receipt, tracking] = co_await all(charged, shipped);
  co_return receipt + "+" + tracking;
}
inline constexpr WorkflowDef<&both> both_wf{"both"};

// Draws random numbers and a UUID, then waits on a timer.
inline Workflow<std::string> dice(WorkflowContext& ctx) {
  const std::string first = std::to_string(ctx.random() % 1000) + " " + ctx.uuid();
  co_await ctx.sleep(1s);
  co_return first + " " + std::to_string(ctx.random() % 1000);
}
inline constexpr WorkflowDef<&dice> dice_wf{"dice"};

// Reports where it is at each step.
inline Workflow<std::string> introspect(WorkflowContext& ctx) {
  const std::string before = std::to_string(ctx.info().history_length) + (ctx.replaying() ? " replaying" : " live");
  co_await ctx.sleep(1s);
  co_return before + ", then " + std::to_string(ctx.info().history_length) + " " + ctx.info().workflow_id;
}
inline constexpr WorkflowDef<&introspect> introspect_wf{"introspect"};

// Logs at each step: the first line must not come back when it replays.
inline Workflow<void> chatty(WorkflowContext& ctx) {
  ctx.log("charging \"order 1\"");
  co_await ctx.sleep(1s);
  ctx.logger().warn("done");
}
inline constexpr WorkflowDef<&chatty> chatty_wf{"chatty"};

}  // namespace reprise::recorded
