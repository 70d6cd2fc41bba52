// LocalActivityExecutor: runs the local activities of a worker's workflow
// tasks (ctx.execute_local) on the worker's activity pool, each with its
// attempts and the backoff between them under its retry policy, and hands
// the outcome to the workflow task that waits for it. An execution is
// found again by its run and call while it is in flight, so a task that
// completed before it finished (to keep the workflow task alive), replayed
// on this worker, waits for the same execution instead of starting another.
//
// Thread safety: all members may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "reprise/activity.hpp"
#include "reprise/detail/blobs.hpp"
#include "reprise/detail/core.hpp"
#include "worker/machines/local_activity_machine.hpp"

namespace reprise::worker {

// One local activity in flight: its outcome once the last attempt is over.
class LocalActivityRun {
 public:
  // Waits for the outcome until `deadline`; true when it is in.
  bool wait_until(std::chrono::steady_clock::time_point deadline);
  // The outcome, only after wait_until() returned true; nullopt when the
  // worker stopped between attempts (nothing is to be recorded for it).
  std::optional<LocalActivityOutcome> outcome() const;
  void finish(LocalActivityOutcome outcome);
  void abandon();

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool over_ = false;
  std::optional<LocalActivityOutcome> outcome_;
};

class LocalActivityExecutor {
 public:
  // A registered activity function (Worker's runner for its type).
  using Function = std::function<v1::Payloads(ActivityContext&, const v1::Payloads&)>;
  // The function registered for a type; null when there is none.
  using Lookup = std::function<const Function*(const std::string& type)>;
  // Runs a job on a thread of the worker's activity pool.
  using Post = std::function<void(std::function<void()>)>;

  // `blobs` (may be null) must outlive the executor.
  LocalActivityExecutor(Lookup lookup, Post post, detail::Blobs* blobs);
  ~LocalActivityExecutor();
  LocalActivityExecutor(const LocalActivityExecutor&) = delete;

  // Runs call `seq` of `workflow`'s run with the type, input, timeouts and
  // retry policy of `request`, or returns the execution of that call
  // still in flight.
  std::shared_ptr<LocalActivityRun> start(const WorkflowInfo& workflow, int64_t seq,
                                          const v1::ScheduleActivityTaskCommandAttributes& request);
  // Ends the backoffs: an execution between attempts is abandoned (the
  // worker is stopping; its workflow task fails and runs it again
  // elsewhere). restart() undoes it, for a worker started again.
  void stop();
  void restart();

 private:
  void run_attempts(LocalActivityRun& run, const Function& function, ActivityInfo info,
                    const v1::ScheduleActivityTaskCommandAttributes& request);
  // Sleeps for `backoff`; false when stop() came first.
  bool sleep_unless_stopped(std::chrono::nanoseconds backoff);

  Lookup lookup_;
  Post post_;
  detail::Blobs* blobs_;
  std::mutex mu_;
  std::condition_variable stopped_cv_;
  bool stopped_ = false;
  std::map<std::string, std::weak_ptr<LocalActivityRun>> in_flight_;  // by "<run id>/<seq>"
};

}  // namespace reprise::worker
