// The Worker's activity execution: one attempt of an activity on a pool
// thread, its heartbeats sent by a throttling sender, and its outcome
// (completed, failed, canceled, or failed as retryable when the worker shuts
// down under it) reported on its task token.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>
#include <type_traits>

#include "history/status.hpp"
#include "reprise/detail/failure.hpp"
#include "reprise/detail/proto_time.hpp"
#include "reprise/worker.hpp"
#include "worker/heartbeat_sender.hpp"
#include "worker/sticky_cache.hpp"
#include "worker/task_pool.hpp"
#include "worker/worker_metrics.hpp"

namespace reprise {

std::function<void()> Worker::activity_job(std::shared_ptr<const v1::PollActivityTaskResponse> task) {
  return [this, task = std::move(task)] {
    metrics_->activity_slots_used.add(1);
    struct Free {
      const metrics::Gauge& slots;
      ~Free() { slots.add(-1); }
    } free_slot{metrics_->activity_slots_used};
    try {
      run_activity(*task);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "reprise worker: %s\n", e.what());  // the attempt times out and is retried
    }
  };
}

template <typename Request, typename Report>
void Worker::report_outcome(Request request, const std::string& run_id, Report report) {
  // The workflow's next task comes to this worker's sticky queue only while
  // it holds the workflow; a thread is held for it before asking. With every
  // thread busy, the task may wait for one here, as it would in the sticky
  // queue, but at most as many tasks wait so as there are threads.
  const bool ask = options_.eager_workflow_tasks && options_.cache_size > 0 && workflow_pool_ != nullptr &&
                   cache_->holds(run_id) && workflow_pool_->try_reserve(options_.workflow_threads);
  if (ask) {
    request.set_eager_workflow_task_queue(sticky_queue_);
    if constexpr (std::is_same_v<Request, v1::CompleteActivityRequest>) request.set_hold_with_workflow_task(true);
  }
  auto answer = [&] {
    try {
      return report(request);
    } catch (...) {
      if (ask) workflow_pool_->release_reserved();
      throw;
    }
  }();
  if (!ask) return;
  if (answer.workflow_task().task_token().empty()) return workflow_pool_->release_reserved();
  std::function<void()> report_again;
  if constexpr (std::is_same_v<Request, v1::CompleteActivityRequest>) {
    if (answer.result_held()) {
      // Only the task's answer commits the result; when that answer is lost
      // (the server restarted, the connection dropped), the result is sent
      // again on its own, through a restart of the server (UNAVAILABLE) for
      // up to a minute. NOT_FOUND then: the attempt is over (timed out, or
      // its start was lost with the result and it runs again).
      request.clear_eager_workflow_task_queue();
      request.clear_hold_with_workflow_task();
      report_again = [this, request = std::move(request)] {
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(1);
        for (std::chrono::milliseconds wait(100);; wait = std::min(wait * 2, std::chrono::milliseconds(2000))) {
          try {
            return connection_->complete_activity(request);
          } catch (const RpcError& e) {
            const bool again = e.code() == static_cast<int>(StatusCode::kUnavailable) && !stopping_ &&
                               std::chrono::steady_clock::now() + wait < give_up;
            if (!again) {
              if (e.code() != static_cast<int>(StatusCode::kNotFound)) {
                std::fprintf(stderr, "reprise worker: activity result held with its workflow task not reported: %s\n",
                             e.what());
              }
              return;
            }
          }
          std::this_thread::sleep_for(wait);
        }
      };
    }
  }
  workflow_pool_->post_reserved(
      workflow_job(std::make_shared<const v1::PollWorkflowTaskResponse>(std::move(*answer.mutable_workflow_task())),
                   std::move(report_again)));
}

void Worker::run_activity(const v1::PollActivityTaskResponse& task) {
  const std::string& type = task.activity_type().name();
  v1::FailActivityRequest failed;
  failed.set_task_token(task.task_token());
  failed.set_identity(options_.identity);
  auto runner = activities_.find(type);
  if (runner == activities_.end()) {
    failed.mutable_failure()->set_message("activity '" + type + "' is not registered with worker " + options_.identity);
    return connection_->fail_activity(failed);
  }
  ActivityInfo info{.workflow_id = task.workflow_execution().workflow_id(),
                    .run_id = task.workflow_execution().run_id(),
                    .activity_id = task.activity_id(),
                    .activity_type = type,
                    .attempt = task.attempt(),
                    .scheduled_time = to_time(task.scheduled_time()),
                    .started_time = to_time(task.started_time()),
                    .heartbeat_timeout = to_nanos(task.heartbeat_timeout())};
  auto bound = [&](TimePoint from, const google::protobuf::Duration& timeout) {
    if (to_nanos(timeout).count() <= 0) return;
    const TimePoint at = from + to_nanos(timeout);
    if (!info.deadline || at < *info.deadline) info.deadline = at;
  };
  bound(info.started_time, task.start_to_close_timeout());
  bound(info.scheduled_time, task.schedule_to_close_timeout());
  const std::chrono::nanoseconds throttle = worker::HeartbeatSender::interval_for(
      info.heartbeat_timeout, options_.default_heartbeat_throttle_interval, options_.max_heartbeat_throttle_interval);
  ActivityContext* heard_cancel = nullptr;  // set before the first heartbeat starts the sender
  worker::HeartbeatSender heartbeats(
      [&](const v1::Payloads& details) {
        v1::HeartbeatActivityRequest r;
        r.set_task_token(task.task_token());
        *r.mutable_details() = details;
        r.set_identity(options_.identity);
        return connection_->heartbeat_activity(r);
      },
      throttle, [&heard_cancel] { heard_cancel->request_cancel(); },
      type + " (activity id " + task.activity_id() + ")");
  ActivityContext context(
      std::move(info), task.heartbeat_details(),
      [&heartbeats](const v1::Payloads& details) { return heartbeats.record(details); }, blobs_.get());
  heard_cancel = &context;
  // The sender thread ends before the context goes and before the outcome is
  // reported: no heartbeat of this attempt reaches the server after it.
  struct StopHeartbeats {
    worker::HeartbeatSender& h;
    ~StopHeartbeats() { h.stop(); }
  } stop_heartbeats{heartbeats};
  {
    std::lock_guard lock(running_mu_);
    running_activities_.insert(&context);
    if (activities_canceled_) context.request_cancel();  // arrived after the grace ran out
  }
  struct Unregister {
    Worker& w;
    ActivityContext* c;
    ~Unregister() {
      std::lock_guard lock(w.running_mu_);
      w.running_activities_.erase(c);
    }
  } unregister{*this, &context};
  const auto began = std::chrono::steady_clock::now();
  try {
    v1::Payloads result = runner->second(context, task.input());
    metrics_->activity_finished(type, std::chrono::steady_clock::now() - began, false);
    heartbeats.stop();  // details not yet sent are not wanted once the activity completes
    blobs_->offload(result);
    v1::CompleteActivityRequest done;
    done.set_task_token(task.task_token());
    *done.mutable_result() = std::move(result);
    done.set_identity(options_.identity);
    report_outcome(std::move(done), task.workflow_execution().run_id(),
                   [this](const v1::CompleteActivityRequest& r) { return connection_->complete_activity_answered(r); });
  } catch (const RpcError&) {
    throw;
  } catch (const CanceledError& e) {
    heartbeats.stop();
    bool by_shutdown = false;
    {
      std::lock_guard lock(running_mu_);
      by_shutdown = activities_canceled_;
    }
    if (by_shutdown) {
      // Nobody canceled the activity: this worker is going away. A retryable
      // failure lets another worker take the next attempt at once.
      failed.mutable_failure()->set_message("worker " + options_.identity +
                                            " shut down before the activity finished: " + e.what());
      failed.mutable_failure()->set_source("cpp-sdk");
      if (auto details = heartbeats.latest()) *failed.mutable_last_heartbeat_details() = std::move(*details);
      return connection_->fail_activity(failed);
    }
    // The activity saw cancel_requested() and gave up: it ends as canceled
    // (unless the attempt is already over, which is why it was told so).
    v1::ReportActivityCanceledRequest canceled;
    canceled.set_task_token(task.task_token());
    canceled.set_identity(options_.identity);
    try {
      connection_->report_activity_canceled(canceled);
    } catch (const RpcError& e) {
      if (e.code() != static_cast<int>(StatusCode::kNotFound)) throw;
    }
  } catch (const std::exception& e) {
    metrics_->activity_finished(type, std::chrono::steady_clock::now() - began, true);
    heartbeats.stop();
    *failed.mutable_failure() = reprise::detail::failure_of(e);
    // The next attempt starts from the latest details, sent or not.
    if (auto details = heartbeats.latest()) *failed.mutable_last_heartbeat_details() = std::move(*details);
    report_outcome(std::move(failed), task.workflow_execution().run_id(),
                   [this](const v1::FailActivityRequest& r) { return connection_->fail_activity_answered(r); });
  }
}

}  // namespace reprise
