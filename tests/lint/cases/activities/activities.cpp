// reprise-direct-activity and reprise-untyped-activity: activities run
// through history, by a typed handle with a constant name.
#include <string>

#include "reprise/activity.hpp"
#include "reprise/workflow.hpp"

using namespace std::chrono_literals;

std::string charge(reprise::ActivityContext&, std::string order) { return "charged " + order; }
constexpr reprise::Activity<&charge> charge_activity{"charge"};

reprise::Workflow<std::string> calls_directly(reprise::WorkflowContext&, reprise::ActivityContext& smuggled) {
  co_return charge(smuggled, "o-1");  // expect: reprise-direct-activity
}

reprise::Workflow<std::string> names_at_run_time(reprise::WorkflowContext& ctx, std::string name) {
  reprise::Activity<&charge> by_name{name.c_str()};  // expect: reprise-untyped-activity
  co_return co_await ctx.execute(by_name, reprise::ActivityOptions::start_to_close(10s), std::string("o-2"));
}

// Negative: the handle.
reprise::Workflow<std::string> through_handle(reprise::WorkflowContext& ctx) {
  co_return co_await ctx.execute(charge_activity, reprise::ActivityOptions::start_to_close(10s), std::string("o-3"));
}
