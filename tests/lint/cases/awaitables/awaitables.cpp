// `co_await` on a user-defined awaitable calls its await_ready,
// await_suspend and await_resume (and an operator co_await that makes the
// awaiter): they are calls, followed like any other.
#include <chrono>
#include <coroutine>
#include <cstdlib>
#include <ctime>

#include "reprise/workflow.hpp"

// Each awaiter reaches its own hazard: a workflow reports a function's
// finding once, through the shortest chain.
struct ReadyIfEven {
  bool await_ready() const noexcept { return std::time(nullptr) % 2 == 0; }
  void await_suspend(std::coroutine_handle<>) const noexcept {}
  int await_resume() const noexcept { return 1; }
};

struct SuspendsNoisily {
  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<>) const noexcept { return std::rand() % 2 == 0; }
  int await_resume() const noexcept { return 2; }
};

struct ResumesWithTime {
  bool await_ready() const noexcept { return true; }
  void await_suspend(std::coroutine_handle<>) const noexcept {}
  long await_resume() const noexcept { return std::chrono::system_clock::now().time_since_epoch().count(); }
};

struct Deadline {
  long seconds;
};
ResumesWithTime operator co_await(Deadline deadline) {
  if (std::getenv("REPRISE_NO_DEADLINES") != nullptr) deadline.seconds = 0;
  return ResumesWithTime{};
}

struct Lazy {
  struct Awaiter {
    bool await_ready() const noexcept { return true; }
    void await_suspend(std::coroutine_handle<>) const noexcept {}
    int await_resume() const noexcept { return 3; }
  };
  Awaiter operator co_await() const { return Awaiter{}; }
};

reprise::Workflow<long> awaits_user_types(reprise::WorkflowContext&) {
  int a = co_await ReadyIfEven{};      // expect: reprise-clock
  int b = co_await SuspendsNoisily{};  // expect: reprise-random
  co_return a + b;
}

reprise::Workflow<long> awaits_through_operator(reprise::WorkflowContext&) {
  long c = co_await Deadline{5};  // expect: reprise-clock reprise-io
  co_return c;
}

// Negative: an awaitable with nothing to find, through its member operator
// co_await, and the SDK's own awaitables.
reprise::Workflow<long> awaits_quietly(reprise::WorkflowContext& ctx) {
  co_await ctx.sleep(std::chrono::seconds(1));
  co_return co_await Lazy{};
}
