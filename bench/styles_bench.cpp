// Stackless against stackful: what one activation costs.
//
// - BM_Switch_*: the bare round trip, into the workflow's code and back.
//   Stackless: resume a coroutine that suspends again. Stackful: switch onto
//   a Boost.Context stack and back. For scale: a mutex + condition-variable
//   ping-pong between two threads (what a thread-per-workflow design pays).
// - BM_Replay_*: 2,000 timer rounds of a workflow replayed in a fresh
//   instance (a worker's cache miss), per activation: the switch plus the
//   runtime's own work (events, commands, the adapter frame of a stackful
//   wait).
#include <benchmark/benchmark.h>

#include <condition_variable>
#include <coroutine>
#include <mutex>
#include <thread>

#include "reprise/stackful.hpp"
#include "tests/worker/history_recorder.hpp"
#include "worker/workflow_instance.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

// A coroutine that suspends every time it is resumed.
struct Looping {
  struct promise_type {
    Looping get_return_object() { return Looping{std::coroutine_handle<promise_type>::from_promise(*this)}; }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { std::terminate(); }
  };
  std::coroutine_handle<promise_type> handle;
};
Looping loop_forever(int64_t& count) {
  for (;;) {
    ++count;
    co_await std::suspend_always{};
  }
}

void BM_Switch_StacklessResume(benchmark::State& state) {
  int64_t count = 0;
  Looping coroutine = loop_forever(count);
  for (auto _ : state) coroutine.handle.resume();
  coroutine.handle.destroy();
  benchmark::DoNotOptimize(count);
}
BENCHMARK(BM_Switch_StacklessResume);

void BM_Switch_StackfulFiber(benchmark::State& state) {
  int64_t count = 0;
  bool stop = false;
  detail::Fiber* self = nullptr;
  detail::Fiber fiber(StackOptions{}, [&] {
    while (!stop) {
      ++count;
      self->suspend();
    }
  });
  self = &fiber;
  for (auto _ : state) fiber.resume();
  stop = true;
  fiber.resume();
  benchmark::DoNotOptimize(count);
}
BENCHMARK(BM_Switch_StackfulFiber);

void BM_Switch_MutexConditionPingPong(benchmark::State& state) {
  std::mutex mu;
  std::condition_variable cv;
  int turn = 0;  // 0: the benchmark thread, 1: the other, 2: stop
  std::thread other([&] {
    std::unique_lock lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return turn != 0; });
      if (turn == 2) return;
      turn = 0;
      cv.notify_one();
    }
  });
  for (auto _ : state) {
    std::unique_lock lock(mu);
    turn = 1;
    cv.notify_one();
    cv.wait(lock, [&] { return turn == 0; });
  }
  {
    std::lock_guard lock(mu);
    turn = 2;
  }
  cv.notify_one();
  other.join();
}
BENCHMARK(BM_Switch_MutexConditionPingPong);

constexpr int kRounds = 2000;

Workflow<int64_t> sleeper(WorkflowContext& ctx) {
  int64_t rounds = 0;
  for (; rounds < kRounds; ++rounds) co_await ctx.sleep(1s);
  co_return rounds;
}
int64_t sleeper_stackful(StackfulContext& ctx) {
  int64_t rounds = 0;
  for (; rounds < kRounds; ++rounds) ctx.sleep(1s);
  return rounds;
}

template <auto Fn>
const v1::History& recorded() {
  static const v1::History history = [] {
    worker::WorkflowInstance live("sleeper", worker::make_starter<Fn>("sleeper"));
    return record_sleeper(live, kRounds).history();
  }();
  return history;
}

template <auto Fn>
void BM_Replay(benchmark::State& state) {
  const v1::History& history = recorded<Fn>();
  for (auto _ : state) {
    worker::WorkflowInstance instance("sleeper", worker::make_starter<Fn>("sleeper"));
    auto r = instance.apply(history);
    if (!r.is_ok() || !instance.finished()) state.SkipWithError("replay failed");
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * (kRounds + 1));  // activations
}
BENCHMARK(BM_Replay<&sleeper>)->Name("BM_Replay_Stackless")->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Replay<&sleeper_stackful>)->Name("BM_Replay_Stackful")->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace reprise

BENCHMARK_MAIN();
