// reprise-direct-activity and reprise-untyped-activity: activities run
// through history, by a typed handle with a constant name.
#include <fstream>
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

// ctx.execute_local runs an activity like ctx.execute: its handle is checked
// the same, and its body, an activity, may do I/O.
reprise::Workflow<std::string> names_local_at_run_time(reprise::WorkflowContext& ctx, std::string name) {
  reprise::Activity<&charge> by_name{name.c_str()};  // expect: reprise-untyped-activity
  co_return co_await ctx.execute_local(by_name, reprise::LocalActivityOptions::start_to_close(10s), std::string("o-4"));
}

std::string read_rate(reprise::ActivityContext&, std::string path) {
  std::ifstream in(path);
  std::string rate;
  in >> rate;
  return rate;
}
constexpr reprise::Activity<&read_rate> read_rate_activity{"read_rate"};

reprise::Workflow<std::string> calls_local_directly(reprise::WorkflowContext&, reprise::ActivityContext& smuggled) {
  co_return read_rate(smuggled, "rates.txt");  // expect: reprise-direct-activity
}

// Negative: the I/O is in the local activity, called through its handle.
reprise::Workflow<std::string> through_local_handle(reprise::WorkflowContext& ctx) {
  co_return co_await ctx.execute_local(read_rate_activity, reprise::LocalActivityOptions::start_to_close(1s),
                                       std::string("rates.txt"));
}
