// A simulated worker process. Its workflow pollers run the real
// worker::WorkflowTaskRunner — the code a Worker runs on its pool threads:
// registry, StickyCache lease, WorkflowInstance replay through TaskHistory,
// commands, sticky attributes, complete/fail/ABORTED, queries — each on a
// SimFiber whose Connection is the simulated network. Each incarnation has
// a real StickyCache of the size drawn from the seed (0 turns caching off,
// as WorkerOptions::cache_size does) and, when it caches, its own sticky
// queue with a poller of its own. Its activity pollers run the generated
// workflow's activity (flaky) for a random time on fibers too; a worker
// with eager slots also takes activities the server starts for it in the
// answer to a workflow task (worker::EagerActivities), each on a fiber of
// its own, as Worker runs them on held threads. crash()
// drops the incarnation: fibers (their stacks unwound), cache, the tasks
// and activities in hand.
//
// Thread safety: none; the simulator's thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "network.hpp"
#include "scheduler.hpp"
#include "sim_connection.hpp"
#include "sim_fiber.hpp"
#include "worker/sticky_cache.hpp"
#include "worker/workflow_task_runner.hpp"

namespace reprise::sim {

class SimWorker {
 public:
  struct Shape {
    int workflow_pollers = 1;
    int activity_pollers = 1;
    int cache_size = 0;           // instances kept between tasks; 0: none
    int history_page_events = 0;  // 0: the engine's default page
    int eager_slots = 0;          // activities it may run eagerly at once; 0: none asked for
  };
  // `stopped` is read before each poll: once true, the pollers poll no more.
  SimWorker(Scheduler& s, Network& network, const worker::WorkflowRegistry& workflows, int index, Shape shape,
            const bool& stopped, bool verbose);
  ~SimWorker();
  SimWorker(const SimWorker&) = delete;

  // A new incarnation under a new identity ("w<index>.<generation>").
  void start();
  // The process dies: every fiber, the cache and the tasks in hand are gone.
  void crash();
  const Shape& shape() const { return shape_; }
  // Activities the server started for it in a workflow task's answer.
  int eager_started() const { return eager_started_; }

 private:
  struct Incarnation;
  class EagerSlots;
  void spawn(const std::string& label, std::function<void()> body);
  void workflow_poll_loop(Incarnation& live, const std::string& queue);
  void activity_poll_loop(Incarnation& live);
  // Runs one attempt on the calling fiber and reports its outcome.
  void run_activity(Incarnation& live, const v1::PollActivityTaskResponse& task);

  Scheduler& s_;
  Network& network_;
  const worker::WorkflowRegistry& workflows_;
  const int index_;
  const Shape shape_;
  const bool& stopped_;
  const bool verbose_;
  int generation_ = 0;
  int eager_started_ = 0;
  std::unique_ptr<Incarnation> live_;
};

}  // namespace reprise::sim
