#include "worker/local_activity_executor.hpp"

#include "history/enum_name.hpp"
#include "history/retry_policy.hpp"
#include "reprise/detail/failure.hpp"
#include "reprise/detail/proto_time.hpp"

namespace reprise::worker {

bool LocalActivityRun::wait_until(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  if (stepped_ == nullptr) return cv_.wait_until(lock, deadline, [this] { return over_; });
  while (!over_ && stepped_->now() < deadline) {
    lock.unlock();
    stepped_->pause(deadline);
    lock.lock();
  }
  return over_;
}

std::optional<LocalActivityOutcome> LocalActivityRun::outcome() const {
  std::lock_guard lock(mu_);
  return outcome_;
}

void LocalActivityRun::finish(LocalActivityOutcome outcome) {
  {
    std::lock_guard lock(mu_);
    outcome_ = std::move(outcome);
    over_ = true;
  }
  cv_.notify_all();
}

void LocalActivityRun::abandon() {
  {
    std::lock_guard lock(mu_);
    over_ = true;
  }
  cv_.notify_all();
}

LocalActivityExecutor::LocalActivityExecutor(Lookup lookup, Post post, detail::Blobs* blobs,
                                             std::optional<SteppedTime> stepped)
    : lookup_(std::move(lookup)), post_(std::move(post)), blobs_(blobs), stepped_(std::move(stepped)) {}

std::chrono::steady_clock::time_point LocalActivityExecutor::now() const {
  return stepped_ ? stepped_->now() : std::chrono::steady_clock::now();
}

LocalActivityExecutor::~LocalActivityExecutor() { stop(); }

void LocalActivityExecutor::stop() {
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
  }
  stopped_cv_.notify_all();
}

void LocalActivityExecutor::restart() {
  std::lock_guard lock(mu_);
  stopped_ = false;
}

namespace {
std::string execution_key(const WorkflowInfo& workflow, int64_t seq) {
  return workflow.run_id + "/" + std::to_string(seq);
}
}  // namespace

std::shared_ptr<LocalActivityRun> LocalActivityExecutor::start(
    const WorkflowInfo& workflow, int64_t seq, const v1::ScheduleActivityTaskCommandAttributes& request) {
  const std::string key = execution_key(workflow, seq);
  auto run = std::make_shared<LocalActivityRun>(stepped_ ? &*stepped_ : nullptr);
  {
    std::lock_guard lock(mu_);
    const auto stale = now() - kKeepUntaken;
    std::erase_if(executions_,
                  [stale](const auto& entry) { return entry.second.ended_at && *entry.second.ended_at < stale; });
    if (auto found = executions_.find(key); found != executions_.end()) return found->second.run;
    executions_[key] = {.run = run, .ended_at = std::nullopt};
  }
  const std::string& type = request.activity_type().name();
  const Function* function = lookup_(type);
  if (function == nullptr) {
    v1::Failure f;
    f.set_message("activity '" + type +
                  "' is not registered with this worker, which runs the workflow's local activities");
    f.set_source("cpp-sdk");
    f.set_kind(v1::FAILURE_KIND_APPLICATION);
    f.set_non_retryable(true);
    run->finish({.result = {}, .failure = std::move(f), .attempts = 0});
    ended(key, run);
    return run;
  }
  ActivityInfo info{.workflow_id = workflow.workflow_id,
                    .run_id = workflow.run_id,
                    .activity_id = "local-" + std::to_string(seq),
                    .activity_type = type};
  // The job holds the execution until it ends, the task until it has the outcome.
  post_([this, key, run, function, info = std::move(info), request] {
    run_attempts(*run, *function, info, request);
    ended(key, run);
  });
  return run;
}

void LocalActivityExecutor::taken(const WorkflowInfo& workflow, int64_t seq) {
  std::lock_guard lock(mu_);
  executions_.erase(execution_key(workflow, seq));
}

void LocalActivityExecutor::ended(const std::string& key, const std::shared_ptr<LocalActivityRun>& run) {
  std::lock_guard lock(mu_);
  auto found = executions_.find(key);
  if (found == executions_.end() || found->second.run != run) return;  // taken already
  if (!run->outcome()) {
    executions_.erase(found);  // abandoned: a later task runs it again
  } else {
    found->second.ended_at = now();
  }
}

void LocalActivityExecutor::run_attempts(LocalActivityRun& run, const Function& function, ActivityInfo info,
                                         const v1::ScheduleActivityTaskCommandAttributes& request) {
  using Steady = std::chrono::steady_clock;
  const std::chrono::nanoseconds start_to_close = to_nanos(request.start_to_close_timeout());
  const std::chrono::nanoseconds schedule_to_close = to_nanos(request.schedule_to_close_timeout());
  const Steady::time_point scheduled = now();
  info.scheduled_time = SystemClock().now();
  for (int attempt = 1;; ++attempt) {
    info.attempt = attempt;
    info.started_time = SystemClock().now();
    info.deadline.reset();
    if (start_to_close.count() > 0) info.deadline = info.started_time + start_to_close;
    if (schedule_to_close.count() > 0) {
      const TimePoint overall = info.scheduled_time + schedule_to_close;
      if (!info.deadline || overall < *info.deadline) info.deadline = overall;
    }
    const Steady::time_point started = now();
    v1::Failure failure;
    try {
      ActivityContext context(
          info, {}, [](const v1::Payloads&) { return false; }, blobs_);
      v1::Payloads result = function(context, request.input());
      // The function cannot be interrupted: one that overran its timeout
      // has its result dropped, as the server drops a late completion.
      const bool late = start_to_close.count() > 0 && now() - started > start_to_close;
      if (!late) return run.finish({.result = std::move(result), .failure = std::nullopt, .attempts = attempt});
      failure.set_kind(v1::FAILURE_KIND_TIMEOUT);
      failure.set_timeout_type(v1::TIMEOUT_TYPE_START_TO_CLOSE);
      failure.set_source("cpp-sdk");
      failure.set_message("local activity timed out (" + enum_name(v1::TIMEOUT_TYPE_START_TO_CLOSE) + ")");
    } catch (const std::exception& e) {
      failure = reprise::detail::failure_of(e);
    }
    const std::chrono::nanoseconds backoff = retry_backoff(request.retry_policy(), attempt + 1);
    const bool in_time = schedule_to_close.count() <= 0 || now() + backoff < scheduled + schedule_to_close;
    if (!policy_allows_retry(request.retry_policy(), failure, attempt) || !in_time) {
      return run.finish({.result = {}, .failure = std::move(failure), .attempts = attempt});
    }
    if (!sleep_unless_stopped(backoff)) return run.abandon();
  }
}

bool LocalActivityExecutor::sleep_unless_stopped(std::chrono::nanoseconds backoff) {
  std::unique_lock lock(mu_);
  if (!stepped_) return !stopped_cv_.wait_for(lock, backoff, [this] { return stopped_; });
  const auto until = stepped_->now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(backoff);
  while (!stopped_ && stepped_->now() < until) {
    lock.unlock();
    stepped_->pause(until);
    lock.lock();
  }
  return !stopped_;
}

}  // namespace reprise::worker
