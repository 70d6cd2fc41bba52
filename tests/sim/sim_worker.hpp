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
// its own, as Worker runs them on held threads. Its workflows' local
// activities run through the real worker::LocalActivityExecutor, its jobs
// on fibers and its time on the virtual clock (SteppedTime). crash()
// drops the incarnation: fibers (their stacks unwound), cache, the tasks,
// activities and local activities in hand.
//
// Thread safety: none; the simulator's thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "network.hpp"
#include "scheduler.hpp"
#include "sim_connection.hpp"
#include "sim_fiber.hpp"
#include "worker/sticky_cache.hpp"
#include "worker/workflow_task_runner.hpp"

namespace reprise::sim {

// What the workers' local and heartbeating activities did, for the model's
// checks and the report. Owned by the simulation; every worker adds to
// the one log. Steps are keyed by (workflow id, step index).
struct ActivityLog {
  using StepKey = std::pair<std::string, int>;
  // Local activities.
  std::map<StepKey, int> succeeded;  // attempts that succeeded
  int attempts = 0;
  int cut_by_crash = 0;            // attempts running when their worker crashed
  int keep_alive_completions = 0;  // workflow tasks completed early to keep a long one alive
  // Heartbeats: the highest count sent and the highest acknowledged, which
  // a retry must resume from at least (an acknowledged heartbeat is never
  // lost) and at most (nothing not sent is seen).
  std::map<StepKey, int> heartbeat_sent, heartbeat_acked;
  int heartbeat_attempts_resumed = 0;  // attempts that resumed from a heartbeat
  int heartbeat_attempts_died = 0;     // first attempts that died after their planned heartbeat
  std::vector<std::string> failures;   // invariants broken where the worker sees them
  // Eager workflow tasks: by run id, the WorkflowTaskStarted event id of
  // each task the engine handed a worker in an activity outcome's answer.
  std::map<std::string, std::vector<int64_t>> eager_workflow_tasks;
  // By run id, the result of each activity completion the engine
  // acknowledged (it names the activity and attempt).
  std::map<std::string, std::vector<std::string>> completions_acked;
  // Results the engine held with the workflow task they woke: acknowledged
  // by that task's answer, or (its answer lost) reported again alone.
  int held_results_answered = 0;
  int held_results_reported_again = 0;
};

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
  // `activity_log` must outlive the worker.
  SimWorker(Scheduler& s, Network& network, const worker::WorkflowRegistry& workflows, int index, Shape shape,
            const bool& stopped, ActivityLog& activity_log, bool verbose);
  ~SimWorker();
  SimWorker(const SimWorker&) = delete;

  // A new incarnation under a new identity ("w<index>.<generation>").
  void start();
  // The process dies: every fiber, the cache and the tasks in hand are gone.
  void crash();
  const Shape& shape() const { return shape_; }
  // Activities the server started for it in a workflow task's answer.
  int eager_started() const { return eager_started_; }
  // Called when a request of this worker that asks for an eager hand-out
  // reaches the engine (the simulation aims engine crashes there).
  std::function<void()> on_eager_request_delivered;
  // The live incarnation's identity ("" while crashed): a start that asks
  // for its first workflow task (eager start) asks for it on this behalf.
  std::string identity() const;
  // Runs the workflow task a start's answer carried, on a fiber of its own,
  // as a poll would have; dropped if the incarnation `identity` names has
  // died since (the task times out and is handed out again).
  void run_eager_start(const std::string& identity, const v1::PollWorkflowTaskResponse& task);

 private:
  struct Incarnation;
  class EagerSlots;
  void spawn(const std::string& label, std::function<void()> body);
  void workflow_poll_loop(Incarnation& live, const std::string& queue);
  void activity_poll_loop(Incarnation& live);
  // Runs one attempt on the calling fiber and reports its outcome.
  void run_activity(Incarnation& live, const v1::PollActivityTaskResponse& task);
  // Whether an activity outcome for `run_id` asks for the run's next
  // workflow task in its answer (eager workflow task).
  bool ask_eager_workflow_task(Incarnation& live, const std::string& run_id);
  // Whether the task's completion or failure was answered.
  bool run_eager_workflow_task(Incarnation& live, const v1::PollWorkflowTaskResponse& task, bool held = false);
  // The local activity's attempt, as the executor calls a registered
  // function: runs for a while on the calling fiber, then calls it.
  v1::Payloads run_local_attempt(ActivityContext& ctx, const v1::Payloads& input);

  Scheduler& s_;
  Network& network_;
  const worker::WorkflowRegistry& workflows_;
  const int index_;
  const Shape shape_;
  const bool& stopped_;
  ActivityLog& activity_log_;
  const bool verbose_;
  int generation_ = 0;
  int eager_started_ = 0;
  std::unique_ptr<Incarnation> live_;
};

}  // namespace reprise::sim
