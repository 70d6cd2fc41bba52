#include "generated_workflow.hpp"

#include <algorithm>
#include <chrono>
#include <optional>

namespace reprise::sim {

namespace {

uint32_t side_effect_calls = 0;
uint64_t local_calls = 0;
int code_version = 2;

// Retries after 1 s, 1.5 s, ... up to 10 s; an attempt that runs past its
// 10 s start-to-close timeout is retried too.
ActivityOptions activity_options() {
  return ActivityOptions::start_to_close(std::chrono::seconds(10))
      .retry({.initial_interval = std::chrono::seconds(1),
              .backoff_coefficient = 1.5,
              .maximum_interval = std::chrono::seconds(10)});
}

// Each attempt may take up to 10 s; retried after 1 s, 1.5 s, ...
LocalActivityOptions local_activity_options() {
  return LocalActivityOptions::start_to_close(std::chrono::seconds(30))
      .retry({.initial_interval = std::chrono::seconds(1),
              .backoff_coefficient = 1.5,
              .maximum_interval = std::chrono::seconds(10)});
}

// The heartbeating activity's: a 3 s heartbeat timeout retries an attempt
// that stopped heartbeating (its worker died).
ActivityOptions progress_options() {
  return ActivityOptions::start_to_close(std::chrono::seconds(60))
      .heartbeat(std::chrono::seconds(3))
      .retry({.initial_interval = std::chrono::seconds(1),
              .backoff_coefficient = 1.5,
              .maximum_interval = std::chrono::seconds(10)});
}

// The spawned branch of an "all" step: a timer, then an activity.
Task<std::string> timer_then_activity(WorkflowContext& ctx, int seconds) {
  co_await ctx.sleep(std::chrono::seconds(seconds));
  co_return co_await ctx.execute(flaky_activity, activity_options(), 0);
}

Task<std::string> run_step(WorkflowContext& ctx, const Step& step, size_t i) {
  const std::string n = std::to_string(i);
  switch (step.kind) {
    case StepKind::kActivity:
      co_await ctx.execute(flaky_activity, activity_options(), step.fail_times);
      co_return "a" + n;
    case StepKind::kLocal:
      co_await ctx.execute_local(local_activity, local_activity_options(), step.fail_times, step.seconds,
                                 static_cast<int>(i));
      co_return "l" + n;
    case StepKind::kHeartbeat:
      co_await ctx.execute(progress_activity, progress_options(), step.seconds, step.fail_times, static_cast<int>(i));
      co_return "h" + n;
    case StepKind::kScheduleToClose: {
      std::string outcome = "x" + n + " completed";
      try {
        co_await ctx.execute(stall_activity, ActivityOptions::schedule_to_close(std::chrono::seconds(5)),
                             static_cast<int>(i));
      } catch (const ActivityError& e) {
        const bool timed_out = std::string(e.what()).find("SCHEDULE_TO_CLOSE") != std::string::npos;
        outcome = timed_out ? "x" + n : "x" + n + " failed otherwise: " + e.what();
      }
      co_return outcome;
    }
    case StepKind::kTimer:
      co_await ctx.sleep(std::chrono::seconds(step.seconds));
      co_return "t" + n;
    case StepKind::kSignal:
      co_return co_await ctx.wait(go_signal);
    case StepKind::kAll: {
      // Issued in separate statements: the order of commands must not
      // depend on the compiler's order of a call's arguments.
      auto activity = ctx.execute(flaky_activity, activity_options(), step.fail_times);
      auto branch = ctx.spawn(timer_then_activity(ctx, step.seconds));
      co_await all(std::move(activity), std::move(branch));
      co_return "A" + n;
    }
    case StepKind::kRace: {
      auto activity = ctx.execute(flaky_activity, activity_options(), step.fail_times);
      auto timer = ctx.sleep(std::chrono::seconds(step.seconds));
      if (co_await any(activity, timer) == 0) {
        timer.cancel();
        co_await activity;
        co_return "R" + n + "a";
      }
      activity.cancel();
      co_await timer;  // throws CanceledError when a cancel of the workflow resolved it
      co_return "R" + n + "t";
    }
    case StepKind::kChild: {
      // Started outside the co_await: see continue_as_new below.
      auto child =
          ctx.execute_child(generated_wf, ChildWorkflowOptions().id(step.child_id).parent_close(step.parent_close),
                            step.child, Carried{});
      if (step.left_running) {
        co_await ctx.wait(child_up_signal);
        co_return "C" + n;
      }
      std::string result = co_await child;
      std::replace(result.begin(), result.end(), ',', ';');
      co_return "c" + n + "(" + result + ")";
    }
    case StepKind::kSideEffect: {
      const uint32_t value = ctx.side_effect([] { return ++side_effect_calls; });
      if (value % 2 == 1) co_await ctx.sleep(std::chrono::seconds(1));
      co_return "s" + n;
    }
    case StepKind::kPatch:
      if (code_version >= 2 && ctx.patched("p" + n)) co_return "P" + n;
      co_await ctx.sleep(std::chrono::seconds(1));
      co_return "O" + n;
    case StepKind::kAwaitCancel:
      co_await ctx.wait(never_signal);
      co_return "";
    case StepKind::kSignalParent: {
      // A parent canceled or terminated while it waited for this signal
      // has closed: nobody is left to tell.
      ExternalFuture sent = ctx.signal_external(step.parent_id, child_up_signal, std::string("up"));
      try {
        co_await sent;
      } catch (const ExternalWorkflowError&) {
      }
      co_return "";
    }
    case StepKind::kFail:
      throw ApplicationError("Planned", "the generated workflow fails here");
    case StepKind::kContinue:  // the caller's
      co_return "";
  }
  co_return "";
}

}  // namespace

void set_code_version(int version) { code_version = version; }

void reset_side_effect_calls() {
  side_effect_calls = 0;
  local_calls = 0;
}

std::string local_flaky(ActivityContext& ctx, int fail_times, int, int) {
  ++local_calls;
  return flaky(ctx, fail_times);
}

uint64_t local_activity_calls() { return local_calls; }

std::string progress(ActivityContext& ctx, int units, int, int) {
  const int from = ctx.last_heartbeat<int>().value_or(0);
  for (int done = from; done < units; ++done) ctx.heartbeat(done + 1);
  return "p" + std::to_string(from) + "-" + ctx.info().activity_id + "@" + std::to_string(ctx.info().attempt);
}

std::string stall(ActivityContext& ctx, int) {
  return ctx.info().activity_id + "@" + std::to_string(ctx.info().attempt);
}

std::string flaky(ActivityContext& ctx, int fail_times) {
  if (ctx.info().attempt <= fail_times) throw ApplicationError("Flaky", "simulated failure");
  return ctx.info().activity_id + "@" + std::to_string(ctx.info().attempt);
}

Workflow<std::string> generated(WorkflowContext& ctx, std::vector<Step> steps, Carried carried) {
  std::string out = carried.parts;
  ctx.on_query(progress_query, [&out] { return out; });
  bool canceled = false;
  std::optional<uint32_t> continue_at;
  try {
    for (size_t i = carried.next_step; i < steps.size(); ++i) {
      if (steps[i].kind == StepKind::kContinue) {
        continue_at = static_cast<uint32_t>(i + 1);
        break;
      }
      const std::string part = co_await run_step(ctx, steps[i], i);
      if (!part.empty()) out += (out.empty() ? "" : ",") + part;
    }
  } catch (const CanceledError&) {
    canceled = true;  // (no co_await inside a handler)
  }
  if (continue_at) {
    // Named, not a temporary inside the co_await expression: GCC 12
    // destroyed such a temporary twice (free(): invalid pointer in ~Carried).
    Carried next{out, *continue_at};
    ContinueAsNew continuing = ctx.continue_as_new(generated_wf, steps, next);
    co_await continuing;
  }
  if (canceled) {
    WorkflowContext cleanup = ctx.non_cancellable();
    co_await cleanup.execute(cleanup_activity, activity_options(), 0);
    throw CanceledError("canceled; cleanup done");
  }
  co_return out;
}

}  // namespace reprise::sim
