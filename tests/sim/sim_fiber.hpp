// Blocking code on the simulator's one thread: the worker's task processing
// (worker::WorkflowTaskRunner) calls its Connection synchronously, so each
// simulated poller runs it on a fiber of its own (detail::Fiber, the
// Boost.Context stack stackful workflows use). A blocking call suspends the
// fiber; the Scheduler job that brings the reply resumes it. Nothing runs
// in parallel: the fiber runs only inside resume(), called from a job.
//
// Owned through shared_ptr by whoever keeps it alive (a simulated worker);
// jobs hold a weak_ptr, so a fiber dropped with its crashed worker (its
// stack unwound by ~Fiber) is never resumed.
//
// Thread safety: none; the simulator's thread only.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "reprise/detail/fiber.hpp"
#include "scheduler.hpp"

namespace reprise::sim {

class SimFiber : public std::enable_shared_from_this<SimFiber> {
 public:
  // `on_end` runs on the scheduler's stack once `body` has returned.
  SimFiber(Scheduler& s, std::function<void()> body, std::function<void()> on_end);

  // The fiber running now; null on the scheduler's own stack.
  static SimFiber* current();

  // Posts the job that first runs the fiber.
  void start(const std::string& label);
  // A job (or a reply's callback) that runs the fiber, if it still exists,
  // until it blocks or ends. Never called from a fiber.
  std::function<void()> resumer();

  // On the fiber: back to the job that resumed it, until the next resume().
  void block();
  // On the fiber: blocks for `d` of virtual time.
  void sleep(Duration d, const std::string& label);

 private:
  void resume();

  Scheduler& s_;
  detail::Fiber fiber_;
  std::function<void()> on_end_;
  bool ended_ = false;
};

}  // namespace reprise::sim
