// LocalActivityExecutor: runs the local activities of a worker's workflow
// tasks (ctx.execute_local) on the worker's activity pool, each with its
// attempts and the backoff between them under its retry policy, and hands
// the outcome to the workflow task that waits for it. An execution is
// found again by its run and call until a task has taken its outcome, so a
// task that completed before it finished (to keep the workflow task alive),
// replayed on this worker, waits for the same execution, or takes the
// outcome it ended with in between, instead of starting another. (With
// caching off nothing else holds the execution between the two tasks.)
//
// Time passes on the steady clock and waits block their thread, unless a
// SteppedTime is given: then the clock is its clock and a wait lets time
// pass in steps (the simulator, tests/sim/, runs the same code in fibers on
// its virtual clock).
//
// Thread safety: all members may be called from any thread (with
// SteppedTime, the thread that steps it only).
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

// The seam for a caller that runs time step by step instead of blocking
// threads: its clock, and a short pause in which others run.
struct SteppedTime {
  std::function<std::chrono::steady_clock::time_point()> now;
  // Lets the caller's clock move on a little (at most to `until`); the
  // state waited for is checked again after each pause.
  std::function<void(std::chrono::steady_clock::time_point until)> pause;
};

// One local activity in flight: its outcome once the last attempt is over.
class LocalActivityRun {
 public:
  // `stepped` (may be null: block) must outlive the run.
  explicit LocalActivityRun(const SteppedTime* stepped = nullptr) : stepped_(stepped) {}
  // Waits for the outcome until `deadline`; true when it is in.
  bool wait_until(std::chrono::steady_clock::time_point deadline);
  // The outcome, only after wait_until() returned true; nullopt when the
  // worker stopped between attempts (nothing is to be recorded for it).
  std::optional<LocalActivityOutcome> outcome() const;
  void finish(LocalActivityOutcome outcome);
  void abandon();

 private:
  const SteppedTime* stepped_;
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

  // `blobs` (may be null) must outlive the executor. Without `stepped`,
  // time is the steady clock's and waits block.
  LocalActivityExecutor(Lookup lookup, Post post, detail::Blobs* blobs, std::optional<SteppedTime> stepped = {});
  ~LocalActivityExecutor();
  LocalActivityExecutor(const LocalActivityExecutor&) = delete;

  // How long an outcome no task has taken is kept: the run's next task may
  // have gone to another worker, which records the call itself.
  static constexpr std::chrono::minutes kKeepUntaken{2};

  // Runs call `seq` of `workflow`'s run with the type, input, timeouts and
  // retry policy of `request`, or returns the execution of that call
  // still in flight or ended with an outcome no task has taken yet.
  std::shared_ptr<LocalActivityRun> start(const WorkflowInfo& workflow, int64_t seq,
                                          const v1::ScheduleActivityTaskCommandAttributes& request);
  // A task has the outcome of call `seq` (to record it): the executor
  // forgets the execution, so a later start of that call runs it anew.
  void taken(const WorkflowInfo& workflow, int64_t seq);
  // Ends the backoffs: an execution between attempts is abandoned (the
  // worker is stopping; its workflow task fails and runs it again
  // elsewhere). restart() undoes it, for a worker started again.
  void stop();
  void restart();
  // The clock the executor's deadlines are measured by.
  std::chrono::steady_clock::time_point now() const;

 private:
  void run_attempts(LocalActivityRun& run, const Function& function, ActivityInfo info,
                    const v1::ScheduleActivityTaskCommandAttributes& request);
  // The execution under `key` is over: its outcome is kept for kKeepUntaken
  // (an abandoned one, with none, is forgotten).
  void ended(const std::string& key, const std::shared_ptr<LocalActivityRun>& run);
  // Sleeps for `backoff`; false when stop() came first.
  bool sleep_unless_stopped(std::chrono::nanoseconds backoff);

  Lookup lookup_;
  Post post_;
  detail::Blobs* blobs_;
  const std::optional<SteppedTime> stepped_;
  std::mutex mu_;
  std::condition_variable stopped_cv_;
  bool stopped_ = false;
  struct Execution {
    std::shared_ptr<LocalActivityRun> run;
    std::optional<std::chrono::steady_clock::time_point> ended_at;  // unset while it runs
  };
  std::map<std::string, Execution> executions_;  // by "<run id>/<seq>", until a task takes the outcome
};

}  // namespace reprise::worker
