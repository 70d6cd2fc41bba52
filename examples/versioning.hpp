// versioning with patched(): version 2 of a shipping workflow adds a fraud
// check. Executions that started on version 1 replay the old path; new ones
// take the check. Both versions are here so tests can replay one history
// with the other.
#pragma once

#include <string>

#include "reprise/activity.hpp"
#include "reprise/workflow.hpp"

namespace examples {

using namespace std::chrono_literals;

inline std::string ship(reprise::ActivityContext&, std::string order) { return "shipped " + order; }
inline std::string fraud_check(reprise::ActivityContext&, std::string order) { return order + " looks fine"; }
inline constexpr reprise::Activity<&ship> ship_activity{"ship"};
inline constexpr reprise::Activity<&fraud_check> fraud_check_activity{"fraud_check"};

inline reprise::Workflow<std::string> shipping_v1(reprise::WorkflowContext& ctx, std::string order) {
  co_await ctx.sleep(std::chrono::milliseconds(200));
  co_return co_await ctx.execute(ship_activity, reprise::ActivityOptions::start_to_close(10s), order);
}

inline reprise::Workflow<std::string> shipping_v2(reprise::WorkflowContext& ctx, std::string order) {
  co_await ctx.sleep(std::chrono::milliseconds(200));
  std::string checked = "not checked";
  if (ctx.patched("fraud-check")) {
    checked = co_await ctx.execute(fraud_check_activity, reprise::ActivityOptions::start_to_close(10s), order);
  }
  co_return checked + ", " + co_await ctx.execute(ship_activity, reprise::ActivityOptions::start_to_close(10s), order);
}
// Both register under one name: a deployment runs one or the other.
inline constexpr reprise::WorkflowDef<&shipping_v1> shipping_v1_wf{"shipping"};
inline constexpr reprise::WorkflowDef<&shipping_v2> shipping_v2_wf{"shipping"};

}  // namespace examples
