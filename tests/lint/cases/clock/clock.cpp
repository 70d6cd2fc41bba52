// reprise-clock: reading a clock in workflow code; ctx.now() is the fix.
#include <sys/time.h>

#include <chrono>
#include <ctime>
#include <string>

#include "reprise/activity.hpp"
#include "reprise/workflow.hpp"

using namespace std::chrono_literals;

reprise::Workflow<long> reads_clocks(reprise::WorkflowContext& ctx) {
  auto wall = std::chrono::system_clock::now();  // expect: reprise-clock
  auto mono = std::chrono::steady_clock::now();  // expect: reprise-clock
  std::time_t t = std::time(nullptr);            // expect: reprise-clock
  timeval tv{};
  gettimeofday(&tv, nullptr);           // expect: reprise-clock
  std::tm* local = std::localtime(&t);  // expect: reprise-clock
  co_await ctx.sleep(1s);
  co_return (mono.time_since_epoch() + wall.time_since_epoch()).count() + local->tm_hour + tv.tv_sec;
}

// Negative: the workflow's own clock and plain chrono arithmetic.
reprise::Workflow<long> uses_ctx_now(reprise::WorkflowContext& ctx) {
  auto start = ctx.now();
  co_await ctx.sleep(5s);
  auto elapsed = ctx.now() - start;
  co_return std::chrono::duration_cast<std::chrono::seconds>(elapsed + 1min).count();
}

// Negative: an activity may read the clock; it is not workflow code.
std::string stamp(reprise::ActivityContext&) { return std::to_string(std::time(nullptr)); }

// A clock in a default argument runs at the call that uses the default, and
// is reported there; a call that passes the argument is clean.
long deadline(long now = std::time(nullptr)) { return now + 60; }

reprise::Workflow<long> uses_default_argument(reprise::WorkflowContext& ctx) {
  long passed = deadline(ctx.now().time_since_epoch().count());
  co_return passed + deadline();  // expect: reprise-clock
}

reprise::Workflow<long> passes_the_argument(reprise::WorkflowContext& ctx) {
  co_return deadline(ctx.now().time_since_epoch().count());
}
