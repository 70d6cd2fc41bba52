// The workflow of worker_tasks_test.cpp, whose history
// recorded/worker_tasks.cpp records from the real engine.
#pragma once

#include <atomic>
#include <string>

#include "reprise/workflow.hpp"

namespace reprise::recorded::worker_tasks {

using namespace std::chrono_literals;

// How many times a side effect of `steps` was computed, in this process.
inline std::atomic<int> side_effects_computed{0};
inline constexpr Query<std::string> state_query{"state"};

// Its state changes (and a side effect runs) only in the task after the timer.
inline Workflow<std::string> steps(WorkflowContext& ctx) {
  std::string state = "started";
  ctx.on_query(state_query, [&state] { return state; });
  ctx.side_effect([] { return ++side_effects_computed; });
  co_await ctx.sleep(1min);
  state = "woke";
  ctx.side_effect([] { return ++side_effects_computed; });
  co_await ctx.sleep(1min);
  co_return state;
}
inline constexpr WorkflowDef<&steps> steps_wf{"steps"};

}  // namespace reprise::recorded::worker_tasks
