#include "generated_workflow.hpp"

#include <chrono>

namespace reprise::sim {

std::string flaky(ActivityContext& ctx, int fail_times) {
  if (ctx.info().attempt <= fail_times) throw ApplicationError("Flaky", "simulated failure");
  return ctx.info().activity_id + "@" + std::to_string(ctx.info().attempt);
}

Workflow<std::string> generated(WorkflowContext& ctx, std::vector<Step> steps) {
  std::string out;
  ctx.on_query(progress_query, [&out] { return out; });
  // Retries after 1 s, 1.5 s, ... up to 10 s; an attempt that runs past its
  // 10 s start-to-close timeout is retried too.
  const ActivityOptions activity = ActivityOptions::start_to_close(std::chrono::seconds(10))
                                       .retry({.initial_interval = std::chrono::seconds(1),
                                               .backoff_coefficient = 1.5,
                                               .maximum_interval = std::chrono::seconds(10)});
  for (size_t i = 0; i < steps.size(); ++i) {
    std::string part;
    switch (steps[i].kind) {
      case StepKind::kActivity:
        co_await ctx.execute(flaky_activity, activity, steps[i].fail_times);
        part = "a" + std::to_string(i);
        break;
      case StepKind::kTimer:
        co_await ctx.sleep(std::chrono::seconds(steps[i].seconds));
        part = "t" + std::to_string(i);
        break;
      case StepKind::kSignal:
        part = co_await ctx.wait(go_signal);
        break;
    }
    out += (out.empty() ? "" : ",") + part;
  }
  co_return out;
}

}  // namespace reprise::sim
