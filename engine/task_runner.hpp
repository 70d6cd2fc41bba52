// TaskRunner: where the engine's posted jobs run. Executor (a pool of
// threads) is the production runner; the deterministic simulator
// (tests/sim/) supplies one that queues jobs for its single seeded scheduler,
// so the engine's logic is the same in both.
//
// Thread safety: an implementation accepts post() from any thread its
// engine runs on, including from a job.
#pragma once

#include <functional>

namespace reprise::engine {

class TaskRunner {
 public:
  virtual ~TaskRunner() = default;
  // Runs `job` later, never inside this call.
  virtual void post(std::function<void()> job) = 0;
};

}  // namespace reprise::engine
