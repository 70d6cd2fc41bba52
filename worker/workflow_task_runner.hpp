// WorkflowTaskRunner: what a worker does with one workflow or query task it
// polled — find the workflow's code, lease its cached instance (or replay it
// from history, reading the pages the task did not bring), answer with the
// commands and the sticky queue, fail the task it cannot process, answer a
// query on a fresh replay. It calls the Connection synchronously on the
// caller's thread and starts none, so the Worker runs it on its pool threads
// and the simulator (tests/sim/) runs the very same code in fibers on one
// seeded scheduler.
//
// Thread safety: run() may be called from several threads at once (the
// cache and the connection are shared; each call works on its own task).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "reprise/client.hpp"
#include "reprise/detail/blobs.hpp"
#include "reprise/detail/workflow_starter.hpp"
#include "reprise/v1/service.pb.h"
#include "worker/local_activity_executor.hpp"
#include "worker/sticky_cache.hpp"
#include "worker/worker_metrics.hpp"

namespace reprise::worker {

class WorkflowInstance;

// The workflow types a worker runs, by name.
using WorkflowRegistry = std::map<std::string, std::shared_ptr<const WorkflowStarter>>;

// Eager activity execution: a task that schedules an activity this worker
// runs asks the server to start it in the completion and runs it without a
// poll. The worker holds a free activity thread for each one it asks for.
// Thread safety: called from any thread running tasks.
class EagerActivities {
 public:
  virtual ~EagerActivities() = default;
  // Holds a free activity thread for an activity of `type`; false when this
  // worker does not run the type or no thread is free.
  virtual bool reserve(const std::string& type) = 0;
  // Runs a task the server started for this worker, on a held thread.
  virtual void run(v1::PollActivityTaskResponse task) = 0;
  // Gives back a held thread the server started no task for.
  virtual void release() = 0;
};

struct WorkflowTaskOptions {
  std::string identity{};
  // The queue this worker polls for activities: only an activity there can
  // run eagerly.
  std::string task_queue{};
  // Null: every activity goes through its queue.
  EagerActivities* eager_activities = nullptr;
  // Runs the workflows' local activities (ctx.execute_local). Null: a task
  // that calls one fails, naming why.
  LocalActivityExecutor* local_activities = nullptr;
  // Where the run's next task is to go while this worker keeps its instance
  // ("": the worker keeps none, caching is off).
  std::string sticky_queue{};
  PanicPolicy panic_policy = PanicPolicy::kFailTask;
  int history_page_events = 0;  // 0: the server's default
  // Called while another task holds the run's lease, in place of blocking
  // the thread until it ends; it must let that task go on and return (the
  // simulator suspends the fiber for a while). Null: block.
  std::function<void()> wait_for_lease{};
  // Where warnings go (a line without its newline). Null: stderr.
  std::function<void(const std::string&)> log{};
  // Cache hits and misses, replays (the worker's). Null: none counted.
  const WorkerMetrics* metrics = nullptr;
};

class WorkflowTaskRunner {
 public:
  // All references must outlive the runner.
  WorkflowTaskRunner(Connection& connection, const WorkflowRegistry& workflows, StickyCache& cache,
                     detail::Blobs& blobs, WorkflowTaskOptions options);

  // Answers a workflow or query task; one it cannot process is failed with
  // the reason, and logged. Throws (RpcError, ...) when neither the answer
  // nor the failure reached the server: the task then times out and comes back.
  void run(const v1::PollWorkflowTaskResponse& task);

 private:
  // Why a workflow task is failed, as FailWorkflowTask reports it.
  struct TaskFailure {
    v1::WorkflowTaskFailedCause cause;
    std::string message;
  };
  // Completes the task, or says why it must fail.
  std::optional<TaskFailure> complete(const v1::PollWorkflowTaskResponse& task);
  void answer_query(const v1::PollWorkflowTaskResponse& task);
  StickyCache::Lease acquire(const std::string& run_id);
  // Runs the local activities `instance` waits for, round after round, each
  // round's outcomes resolved together and the code run on, until none is
  // left (false) or `deadline` comes first (true: the task is to complete
  // with what it has and ask for the next at once, its local activities
  // still running). `activation` follows each round.
  bool run_local_activities(WorkflowInstance& instance, ApplyResult& activation,
                            std::chrono::steady_clock::time_point deadline);
  // Asks for eager execution of `command` if it schedules an activity this
  // worker can run now; true when a thread is held for it.
  bool ask_eager(v1::Command& command);
  void log(const std::string& line) const;

  Connection& connection_;
  const WorkflowRegistry& workflows_;
  StickyCache& cache_;
  detail::Blobs& blobs_;
  WorkflowTaskOptions options_;
};

}  // namespace reprise::worker
