// The Worker's life (options, start, stop). The poll loops are in
// poll_loops.cpp, workflow and query tasks in workflow_task_runner.cpp,
// activity execution in activity_execution.cpp, the sticky cache in
// sticky_cache.cpp.
#include "reprise/worker.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <utility>

#include "history/status.hpp"
#include "worker/eager_slots.hpp"
#include "worker/local_activity_executor.hpp"
#include "worker/sticky_cache.hpp"
#include "worker/task_pool.hpp"
#include "worker/workflow_task_runner.hpp"

namespace reprise {

namespace {

std::string default_identity() {
  char host[256] = "host";
  gethostname(host, sizeof host - 1);
  return std::string(host) + ":" + std::to_string(getpid());
}

}  // namespace

Worker::Worker(std::shared_ptr<Connection> connection, WorkerOptions options)
    : connection_(std::move(connection)), options_(std::move(options)) {
  if (!connection_) throw std::invalid_argument("Worker needs a connection");
  if (options_.task_queue.empty()) throw std::invalid_argument("WorkerOptions.task_queue is required");
  if (options_.workflow_threads < 1) throw std::invalid_argument("WorkerOptions.workflow_threads must be at least 1");
  if (options_.activity_threads < 1) throw std::invalid_argument("WorkerOptions.activity_threads must be at least 1");
  if (options_.workflow_pollers < 1) throw std::invalid_argument("WorkerOptions.workflow_pollers must be at least 1");
  if (options_.activity_pollers < 1) throw std::invalid_argument("WorkerOptions.activity_pollers must be at least 1");
  if (options_.cache_size > 0 && options_.cache_bytes == 0) {
    throw std::invalid_argument("WorkerOptions.cache_bytes is 0 while cache_size is " +
                                std::to_string(options_.cache_size) + ": set cache_size to 0 to turn caching off");
  }
  if (options_.cache_size < 0) throw std::invalid_argument("WorkerOptions.cache_size must not be negative");
  if (options_.identity.empty()) options_.identity = default_identity();
  sticky_queue_ = options_.task_queue + "/" + options_.identity;
  cache_ = std::make_unique<worker::StickyCache>(options_.cache_size, options_.cache_bytes);
  metrics_ = std::make_unique<worker::WorkerMetrics>(options_.metrics.get(), options_.task_queue);
  blobs_ = std::make_unique<detail::Blobs>(*connection_, detail::BlobOptions{.cache_bytes = options_.blob_cache_bytes});
  if (options_.eager_activities) eager_slots_ = std::make_unique<EagerSlots>(*this);
  // A local activity's type is registered, so the activity pool exists.
  local_activities_ = std::make_unique<worker::LocalActivityExecutor>(
      [this](const std::string& type) {
        auto it = activities_.find(type);
        return it == activities_.end() ? nullptr : &it->second;
      },
      [this](std::function<void()> job) { activity_pool_->post(std::move(job)); }, blobs_.get());
  workflow_tasks_ = std::make_unique<worker::WorkflowTaskRunner>(
      *connection_, workflows_, *cache_, *blobs_,
      worker::WorkflowTaskOptions{.identity = options_.identity,
                                  .task_queue = options_.task_queue,
                                  .eager_activities = eager_slots_.get(),
                                  .local_activities = local_activities_.get(),
                                  .sticky_queue = options_.cache_size > 0 ? sticky_queue_ : std::string(),
                                  .panic_policy = options_.panic_policy,
                                  .history_page_events = options_.history_page_events,
                                  .metrics = metrics_.get()});
}

Worker::~Worker() { stop(); }

void Worker::add_workflow(const std::string& name, worker::WorkflowStarter starter) {
  if (!workflows_.emplace(name, std::make_shared<const worker::WorkflowStarter>(std::move(starter))).second) {
    throw std::invalid_argument("workflow '" + name + "' is already registered with this worker");
  }
}

void Worker::add_activity(const std::string& name, ActivityRunner runner) {
  if (!activities_.emplace(name, std::move(runner)).second) {
    throw std::invalid_argument("activity '" + name + "' is already registered with this worker");
  }
}

void Worker::start() {
  stopping_ = false;
  activities_canceled_ = false;
  local_activities_->restart();
  // Both pools before any poller: workflow tasks hold activity threads for
  // eager activities, and activities workflow threads for eager workflow tasks.
  if (!activities_.empty()) activity_pool_ = std::make_unique<worker::TaskPool>(options_.activity_threads);
  if (!workflows_.empty()) workflow_pool_ = std::make_unique<worker::TaskPool>(options_.workflow_threads);
  if (!activities_.empty()) {
    for (int i = 0; i < options_.activity_pollers; ++i) pollers_.emplace_back([this] { activity_poll_loop(); });
  }
  if (!workflows_.empty()) {
    for (int i = 0; i < options_.workflow_pollers; ++i) {
      pollers_.emplace_back([this] { workflow_poll_loop(options_.task_queue); });
    }
    if (options_.cache_size > 0) pollers_.emplace_back([this] { workflow_poll_loop(sticky_queue_); });
    eager_start_ = std::make_shared<EagerStart>(*this);
    connection_->add_eager_start_target(options_.task_queue, eager_start_);
  }
}

void Worker::stop() {
  stopping_ = true;
  // No start hands this worker a task any more.
  if (eager_start_) {
    connection_->remove_eager_start_target(options_.task_queue, eager_start_.get());
    eager_start_->detach();
    eager_start_.reset();
  }
  // Pollers waiting for a free thread give up ...
  if (workflow_pool_) workflow_pool_->close();
  if (activity_pool_) activity_pool_->close();
  // ... and polls in flight end now, not at the server's poll timeout (a
  // minute remote, longer than a container's grace period). Again until
  // every poller is out: one may have been about to poll.
  while (polling_threads_ > 0) {
    connection_->cancel_polls();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // Local activities waiting to retry give up (their workflow tasks fail
  // and run them again elsewhere); running attempts finish.
  local_activities_->stop();
  if (activity_pool_) {
    if (!activity_pool_->wait_idle_until(std::chrono::steady_clock::now() + options_.shutdown_grace)) {
      std::lock_guard lock(running_mu_);
      activities_canceled_ = true;
      for (ActivityContext* running : running_activities_) running->request_cancel();
    }
  }
  for (auto& t : pollers_) t.join();
  pollers_.clear();
  if (workflow_pool_) workflow_pool_->join();
  if (activity_pool_) activity_pool_->join();
  workflow_pool_.reset();
  activity_pool_.reset();
}

}  // namespace reprise
