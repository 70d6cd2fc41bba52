// Stackful workflows are roots too, recognized by their registration (the
// function a reprise::WorkflowDef names); their helpers, which take the same
// StackfulContext&, are plain functions on the way.
#include "reprise/stackful.hpp"

#include <chrono>
#include <string>

#include "reprise/activity.hpp"

using namespace std::chrono_literals;

std::string charge(reprise::ActivityContext&, std::string order) { return order; }
constexpr reprise::Activity<&charge> charge_activity{"charge"};

long deadline_from_wall_clock() { return std::chrono::system_clock::now().time_since_epoch().count(); }

std::string charge_later(reprise::StackfulContext& ctx, const std::string& order) {
  ctx.sleep(std::chrono::nanoseconds(deadline_from_wall_clock() % 1000));
  return ctx.execute(charge_activity, reprise::ActivityOptions::start_to_close(10s), order).get();
}

std::string checkout(reprise::StackfulContext& ctx, std::string order) {
  return charge_later(ctx, order);  // expect: reprise-clock
}

// Negative: the same without the wall clock.
std::string checkout_on_time(reprise::StackfulContext& ctx, std::string order) {
  ctx.sleep(1h);
  return ctx.execute(charge_activity, reprise::ActivityOptions::start_to_close(10s), order).get();
}

// Registration makes them workflows; charge_later is a helper on the way.
inline constexpr reprise::WorkflowDef<&checkout> checkout_wf{"checkout"};
inline constexpr reprise::WorkflowDef<&checkout_on_time> checkout_on_time_wf{"checkout_on_time"};
