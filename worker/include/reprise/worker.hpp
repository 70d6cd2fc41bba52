// Worker: hosts workflows and activities for one task queue.
//
//   reprise::Worker worker(connection, {.task_queue = "orders"});
//   worker.register_workflow(checkout_wf);
//   worker.register_activity(charge_card);
//   worker.start();   // pollers and pools run until stop()
//
// Workflow tasks and activities run on separate pools of plain threads: an
// activity may block, a workflow task must not. A local activity
// (ctx.execute_local) runs on the activity pool while its workflow task
// waits for it. Each workflow task replays
// a cached workflow forward (or replays it from history after a cache miss)
// and answers with the commands it issues.
//
// Thread safety: register before start(); start() and stop() from one thread.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "reprise/activity.hpp"
#include "reprise/client.hpp"
#include "reprise/detail/workflow_starter.hpp"
#include "reprise/export.hpp"
#include "reprise/metrics.hpp"
#include "reprise/workflow.hpp"

namespace reprise::worker {
class LocalActivityExecutor;
class StickyCache;
class TaskPool;
class WorkflowTaskRunner;
struct WorkerMetrics;
}  // namespace reprise::worker

namespace reprise {

using PanicPolicy = worker::PanicPolicy;

// Every member has a default, so designated initializers that name only some
// of them compile cleanly under -Wextra.
struct WorkerOptions {
  std::string task_queue{};
  int workflow_threads = 2;
  int activity_threads = 4;
  // Long-polls kept open for each kind of task (plus one for the sticky
  // queue). A poller asks only while a thread of its pool is free.
  int workflow_pollers = 2;
  int activity_pollers = 2;
  std::string identity{};  // "" = host name and process id
  // Workflows kept in memory between their tasks (sticky execution): their
  // next task comes to this worker with only the new events and needs no
  // replay. 0 turns caching off.
  int cache_size = 1000;
  // ... and the memory they may hold in all (coroutine frames and the
  // values they keep), least recently used evicted first.
  size_t cache_bytes = size_t{256} << 20;
  // What a bug in workflow code (an exception that is not a workflow
  // outcome) does: fail the task, so the workflow waits for a fix and
  // resumes when the fixed code is deployed, or fail the workflow.
  PanicPolicy panic_policy = PanicPolicy::kFailTask;
  // Claim-check payloads fetched for workflows and activities are kept up
  // to this many bytes for the next reader.
  size_t blob_cache_bytes = 64 << 20;
  // stop() lets running activities finish for this long, then tells them to
  // cancel (ActivityContext::cancel_requested) and waits for them to return.
  std::chrono::milliseconds shutdown_grace{10'000};
  // Heartbeats are throttled as Temporal's SDKs throttle them: the first is
  // sent at once, then at most one per interval, the latest details. The
  // interval is 0.8 × the activity's heartbeat timeout, at most `max_...`;
  // for an activity with no heartbeat timeout it is `default_...` (which is
  // also about how late such an activity hears of a cancellation).
  std::chrono::milliseconds max_heartbeat_throttle_interval{60'000};
  std::chrono::milliseconds default_heartbeat_throttle_interval{30'000};
  // Events per page of history: a workflow or query task comes with one
  // page and the worker reads the rest as it replays (0: the server's
  // default of 1000). A replay holds one page at a time.
  int history_page_events = 0;
  // The stack of each stackful workflow and of each of its branches
  // (reprise/stackful.hpp). The cache counts the whole reserved size.
  StackOptions stack{};
  // Eager activity execution: a workflow task that schedules an activity
  // this worker runs, on its own task queue, while an activity thread is
  // free, has the server start it in the task's completion and runs it
  // with no poll (one round trip and one durable write fewer).
  bool eager_activities = true;
  // Eager workflow tasks: an activity of a workflow this worker holds in its
  // cache asks the server for the workflow task its result wakes in the
  // same reply, and runs it with no poll (waiting for a workflow thread if
  // none is free, unless workflow_threads tasks wait already). Needs
  // cache_size > 0.
  bool eager_workflow_tasks = true;
  // Where the worker counts what it does: task slots used, the sticky
  // cache's size, hits and misses, replays, activity latency and failures,
  // poll latency (docs/operations.md, "Metrics"). The program serves it as
  // it likes (Registry::scrape() is the Prometheus text). Null: nothing is
  // counted. Several workers may share one; the worker keeps it alive.
  std::shared_ptr<metrics::Registry> metrics{};
};

class REPRISE_EXPORT Worker {
 public:
  // Throws std::invalid_argument for options that cannot work.
  Worker(std::shared_ptr<Connection> connection, WorkerOptions options);
  ~Worker();
  Worker(const Worker&) = delete;

  template <auto Fn>
  void register_workflow(const WorkflowDef<Fn>& workflow) {
    add_workflow(workflow.name, worker::make_starter<Fn>(workflow.name, options_.stack));
  }
  template <auto Fn>
  void register_activity(const Activity<Fn>& activity) {
    add_activity(activity.name, make_activity_runner<Fn>(activity.name));
  }

  void start();
  // Stops polling (polls in flight are canceled at once), finishes the
  // workflow tasks in hand, gives running activities `shutdown_grace` to
  // finish and then cancels them. Returns once every thread has ended.
  void stop();

 private:
  using ActivityRunner = std::function<v1::Payloads(ActivityContext&, const v1::Payloads&)>;
  template <auto Fn>
  static ActivityRunner make_activity_runner(std::string name);

  void add_workflow(const std::string& name, worker::WorkflowStarter starter);
  void add_activity(const std::string& name, ActivityRunner runner);
  void workflow_poll_loop(const std::string& queue);
  void activity_poll_loop();
  void run_activity(const v1::PollActivityTaskResponse& task);
  // run_activity() as a job for the activity pool; a failure to report is
  // logged (the attempt times out and is retried).
  std::function<void()> activity_job(std::shared_ptr<const v1::PollActivityTaskResponse> task);
  // A workflow or query task as a job for the workflow pool; a failure to
  // answer is logged (the task times out and comes back), then
  // `if_unanswered` runs, if set.
  std::function<void()> workflow_job(std::shared_ptr<const v1::PollWorkflowTaskResponse> task,
                                     std::function<void()> if_unanswered = {});
  // Reports an activity's outcome (CompleteActivity, FailActivity), asking
  // for the workflow task it wakes when this worker holds the workflow and
  // a workflow thread can be held for it, and runs that task if the server
  // started it.
  // A result the server held with that task (result_held) is reported again
  // if the task's answer does not get through.
  template <typename Request, typename Report>
  void report_outcome(Request request, const std::string& run_id, Report report);
  class EagerSlots;  // worker/eager_slots.hpp
  class EagerStart;  // worker/eager_slots.hpp: this worker as a target of eager starts

  std::shared_ptr<Connection> connection_;
  WorkerOptions options_;
  std::unique_ptr<detail::Blobs> blobs_;
  std::map<std::string, std::shared_ptr<const worker::WorkflowStarter>> workflows_;
  std::map<std::string, ActivityRunner> activities_;
  std::string sticky_queue_;  // this worker's own queue for the workflows it caches
  std::unique_ptr<worker::StickyCache> cache_;
  std::unique_ptr<worker::WorkerMetrics> metrics_;                   // before the pools: their jobs count into it
  std::unique_ptr<EagerSlots> eager_slots_;                          // activity threads held for eager activities
  std::shared_ptr<EagerStart> eager_start_;                          // registered with the connection while running
  std::unique_ptr<worker::LocalActivityExecutor> local_activities_;  // runs ctx.execute_local on the activity pool
  std::unique_ptr<worker::WorkflowTaskRunner> workflow_tasks_;       // answers workflow and query tasks
  std::atomic<bool> stopping_{false};
  std::unique_ptr<worker::TaskPool> workflow_pool_;
  std::unique_ptr<worker::TaskPool> activity_pool_;
  std::vector<std::thread> pollers_;
  std::atomic<int> polling_threads_{0};  // poll loops not yet ended
  // Running activities, to cancel when the shutdown grace runs out.
  std::mutex running_mu_;
  std::set<ActivityContext*> running_activities_;
  bool activities_canceled_ = false;
};

template <auto Fn>
Worker::ActivityRunner Worker::make_activity_runner(std::string name) {
  using Sig = detail::ActivitySignature<decltype(Fn)>;
  return [name = std::move(name)](ActivityContext& ctx, const v1::Payloads& input) {
    auto call = [&]<typename... Args>(std::tuple<Args...>*) {
      std::tuple<Args...> args = from_payloads<Args...>(input, "the input of activity '" + name + "'", ctx.loader());
      return std::apply([&](Args&... a) { return Fn(ctx, std::move(a)...); }, args);
    };
    v1::Payloads out;
    if constexpr (std::is_void_v<typename Sig::result>) {
      call(static_cast<typename Sig::args*>(nullptr));
      *out.add_payloads() = null_payload();
    } else {
      *out.add_payloads() = to_payload(call(static_cast<typename Sig::args*>(nullptr)));
    }
    return out;
  };
}

}  // namespace reprise
