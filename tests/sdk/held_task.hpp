// The workflow of the worker-kill test (worker_kill_test.cpp): one activity
// whose first attempt, in the worker process the test kills
// (held_task_worker.cpp), says that it has started and then never returns.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "reprise/activity.hpp"
#include "reprise/workflow.hpp"

namespace reprise::held_task {

using namespace std::chrono_literals;

inline constexpr char kQueue[] = "held";

// Set in the process the test kills: there the activity holds its task.
inline std::atomic<bool> hold_here{false};

inline std::string step(ActivityContext& ctx, std::string order) {
  if (hold_here) {
    // The line the test waits for before it kills this process: from here
    // on this worker holds the activity task, until it dies.
    std::printf("holding %s attempt %d\n", order.c_str(), ctx.info().attempt);
    std::fflush(stdout);
    for (;;) std::this_thread::sleep_for(1h);
  }
  return order + " done on attempt " + std::to_string(ctx.info().attempt);
}
inline constexpr Activity<&step> step_activity{"step"};

// The attempt held by a dead worker times out after 2 s and is retried.
inline Workflow<std::string> held(WorkflowContext& ctx, std::string order) {
  co_return co_await ctx.execute(step_activity, ActivityOptions::start_to_close(2s).retry_initial_interval(100ms),
                                 order);
}
inline constexpr WorkflowDef<&held> held_wf{"held"};

// The eager-workflow-task kill: a quick activity, after which the workflow's
// next task (the one the activity's answer brings, with no poll) says it has
// started and never returns in the process the test kills.
inline std::atomic<bool> hold_workflow_task_here{false};

inline std::string quick(ActivityContext&, std::string order) { return order + " stepped"; }
inline constexpr Activity<&quick> quick_activity{"quick"};

inline Workflow<std::string> held_after_step(WorkflowContext& ctx, std::string order) {
  std::string stepped = co_await ctx.execute(quick_activity, ActivityOptions::start_to_close(10s), order);
  if (hold_workflow_task_here) {
    std::printf("holding the workflow task after %s\n", stepped.c_str());
    std::fflush(stdout);
    for (;;) std::this_thread::sleep_for(1h);
  }
  co_return stepped + " and finished";
}
inline constexpr WorkflowDef<&held_after_step> held_after_step_wf{"held_after_step"};

}  // namespace reprise::held_task
