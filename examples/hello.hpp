// hello: one workflow, one activity.
#pragma once

#include <string>

#include "reprise/activity.hpp"
#include "reprise/workflow.hpp"

namespace examples {

using namespace std::chrono_literals;

inline std::string greet(reprise::ActivityContext&, std::string name) { return "Hello, " + name + "!"; }
inline constexpr reprise::Activity<&greet> greet_activity{"greet"};

inline reprise::Workflow<std::string> hello(reprise::WorkflowContext& ctx, std::string name) {
  co_return co_await ctx.execute(greet_activity, reprise::ActivityOptions::start_to_close(10s), name);
}
inline constexpr reprise::WorkflowDef<&hello> hello_wf{"hello"};

}  // namespace examples
