// The Worker's life (options, start, stop) and its workflow and query tasks.
// The poll loops are in poll_loops.cpp, activity execution in
// activity_execution.cpp, the sticky cache in sticky_cache.cpp.
#include "reprise/worker.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <utility>

#include "history/status.hpp"
#include "worker/sticky_cache.hpp"
#include "worker/task_history.hpp"
#include "worker/task_pool.hpp"

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
  blobs_ = std::make_unique<detail::Blobs>(*connection_, detail::BlobOptions{.cache_bytes = options_.blob_cache_bytes});
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
  if (!workflows_.empty()) {
    workflow_pool_ = std::make_unique<worker::TaskPool>(options_.workflow_threads);
    for (int i = 0; i < options_.workflow_pollers; ++i) {
      pollers_.emplace_back([this] { workflow_poll_loop(options_.task_queue); });
    }
    if (options_.cache_size > 0) pollers_.emplace_back([this] { workflow_poll_loop(sticky_queue_); });
  }
  if (!activities_.empty()) {
    activity_pool_ = std::make_unique<worker::TaskPool>(options_.activity_threads);
    for (int i = 0; i < options_.activity_pollers; ++i) pollers_.emplace_back([this] { activity_poll_loop(); });
  }
}

void Worker::stop() {
  stopping_ = true;
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

void Worker::run_workflow_task(const v1::PollWorkflowTaskResponse& task) {
  if (task.queries_size() > 0) {
    // A query has no workflow task to fail: an answer the server no longer
    // waits for (the query timed out, the server restarted) is only logged.
    try {
      answer_query(task);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "level=warn msg=\"query answer not delivered\" workflow_id=%s reason=\"%s\"\n",
                   task.workflow_execution().workflow_id().c_str(), e.what());
    }
    return;
  }
  std::optional<TaskFailure> failure;
  try {
    failure = complete_workflow_task(task);
  } catch (const std::exception& e) {
    // A task this worker could not decode, replay or answer (a history
    // page that does not parse, a payload that cannot be stored, an answer
    // the server refused): fail it with the reason, so describe and the
    // log say why instead of the workflow sitting RUNNING until the task
    // times out. When the server is away this fails too, and the caller
    // logs that; the task then times out and comes back.
    failure = {v1::WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_CODE_ERROR,
               std::string("the worker could not process the task: ") + e.what()};
  }
  if (!failure) return;
  std::fprintf(stderr, "level=warn msg=\"workflow task failed\" workflow_id=%s run_id=%s cause=%s reason=\"%s\"\n",
               task.workflow_execution().workflow_id().c_str(), task.workflow_execution().run_id().c_str(),
               v1::WorkflowTaskFailedCause_Name(failure->cause).c_str(), failure->message.c_str());
  v1::FailWorkflowTaskRequest r;
  r.set_task_token(task.task_token());
  r.set_cause(failure->cause);
  r.mutable_failure()->set_message(std::move(failure->message));
  r.mutable_failure()->set_source("cpp-sdk");
  r.set_identity(options_.identity);
  connection_->fail_workflow_task(r);
}

std::optional<Worker::TaskFailure> Worker::complete_workflow_task(const v1::PollWorkflowTaskResponse& task) {
  const std::string& type = task.workflow_type().name();
  auto starter = workflows_.find(type);
  if (starter == workflows_.end()) {
    return TaskFailure{v1::WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_CODE_ERROR,
                       "workflow '" + type + "' is not registered with worker " + options_.identity};
  }
  const std::string& run_id = task.workflow_execution().run_id();
  // This task alone holds the run's instance until it gives it back.
  worker::StickyCache::Lease lease = cache_->acquire(run_id);
  std::unique_ptr<worker::WorkflowInstance> instance = lease.take();
  // The cached instance serves the task that continues it; any other task
  // replays from the start (a sticky one whose workflow was evicted, or
  // never here, reads the events before its own).
  const int64_t first = task.history().events_size() > 0 ? task.history().events(0).event_id() : 1;
  if (!instance || instance->last_event_id() + 1 != first) {
    instance = std::make_unique<worker::WorkflowInstance>(type, starter->second, options_.panic_policy);
    instance->set_execution(task.workflow_execution().workflow_id(), run_id);
    instance->set_blobs(blobs_.get());
  }
  worker::TaskHistory history(*connection_, task, instance->last_event_id() + 1, options_.history_page_events);
  worker::ApplyResult activation =
      history.apply([&instance](const v1::History& chunk) { return instance->apply(chunk); });
  if (!activation) {
    lease.release(nullptr);  // the instance is dropped: the retry replays afresh
    return TaskFailure{activation.nondeterministic() ? v1::WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISM
                                                     : v1::WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_CODE_ERROR,
                       activation.status().message()};
  }
  v1::CompleteWorkflowTaskRequest done;
  done.set_task_token(task.task_token());
  done.set_identity(options_.identity);
  for (auto& c : activation->commands) {
    blobs_->offload(c);
    *done.add_commands() = std::move(c);
  }
  const bool keep = options_.cache_size > 0 && !instance->finished();
  if (keep) done.mutable_sticky_attributes()->mutable_worker_task_queue()->set_name(sticky_queue_);
  // Back in the cache before the answer: the run's next task may reach
  // another thread as soon as the server has the answer.
  lease.release(keep ? std::move(instance) : nullptr);
  try {
    connection_->complete_workflow_task(done);
  } catch (const RpcError& e) {
    // Not recorded: the kept instance is ahead of history and must not serve the retry.
    cache_->evict(run_id);
    // ABORTED: the server took the answer and applied none of it because
    // events arrived while the workflow tried to close; it failed the task
    // itself and a fresh task will deliver them. Failing the task again
    // would only be refused.
    if (e.code() != static_cast<int>(StatusCode::kAborted)) throw;
    std::fprintf(stderr, "level=info msg=\"workflow task answer not applied\" workflow_id=%s run_id=%s reason=\"%s\"\n",
                 task.workflow_execution().workflow_id().c_str(), run_id.c_str(), e.what());
  } catch (...) {
    cache_->evict(run_id);
    throw;
  }
  return std::nullopt;
}

void Worker::answer_query(const v1::PollWorkflowTaskResponse& task) {
  v1::CompleteWorkflowTaskRequest r;
  r.set_task_token(task.task_token());
  r.set_identity(options_.identity);
  // A fresh replay of the tasks history shows completed: the cached
  // instance may be busy with a workflow task on another thread, and the
  // task in flight (the query's history may end with its
  // WorkflowTaskStarted) must not run here: its side effects and log lines
  // are its own, and its state may never come to exist.
  auto starter = workflows_.find(task.workflow_type().name());
  std::unique_ptr<worker::WorkflowInstance> instance;
  Status replayed = Status::not_found("workflow '" + task.workflow_type().name() + "' is not registered with worker " +
                                      options_.identity);
  if (starter != workflows_.end()) {
    instance = std::make_unique<worker::WorkflowInstance>(task.workflow_type().name(), starter->second);
    instance->set_execution(task.workflow_execution().workflow_id(), task.workflow_execution().run_id());
    instance->set_blobs(blobs_.get());
    try {
      worker::TaskHistory history(*connection_, task, 1, options_.history_page_events);
      replayed =
          history.apply([&instance](const v1::History& chunk) { return instance->replay_completed(chunk); }).status();
    } catch (const std::exception& e) {
      replayed = Status::unavailable(std::string("the worker could not read the workflow's history: ") + e.what());
    }
  }
  for (const auto& [id, query] : task.queries()) {
    v1::WorkflowQueryResult& result = (*r.mutable_query_results())[id];
    Result<v1::Payloads> answer =
        replayed.is_ok() ? instance->query(query.query_type()) : Result<v1::Payloads>(replayed);
    if (answer) {
      *result.mutable_answer() = std::move(answer).value();
    } else {
      result.set_error_message(answer.status().message());
    }
  }
  connection_->complete_workflow_task(r);
}

}  // namespace reprise
