// Template instantiations are followed with their arguments; Task<> helpers
// reachable from a workflow are checked on the way.
#include <chrono>
#include <cstdlib>
#include <string>

#include "reprise/workflow.hpp"

template <typename T>
T jitter(T base) {
  return base + static_cast<T>(std::rand() % 3);
}

template <typename Clock>
struct Stopwatch {
  long elapsed() const { return Clock::now().time_since_epoch().count(); }
};

reprise::Task<int> retry_delay(reprise::WorkflowContext& ctx, int attempt) {
  co_await ctx.sleep(std::chrono::seconds(1));
  co_return jitter(attempt);
}

reprise::Workflow<long> uses_templates(reprise::WorkflowContext& ctx) {
  int delay = co_await retry_delay(ctx, 2);  // expect: reprise-random
  Stopwatch<std::chrono::steady_clock> watch;
  co_return delay + watch.elapsed();  // expect: reprise-clock
}

// Negative: a template with no hazard.
template <typename T>
T twice(T v) {
  return v + v;
}
reprise::Workflow<int> clean_template(reprise::WorkflowContext&, int n) { co_return twice(n); }
