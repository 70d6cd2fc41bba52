#include "worker/workflow_task_runner.hpp"

#include <chrono>
#include <cstdio>
#include <utility>

#include "history/status.hpp"
#include "worker/task_history.hpp"
#include "worker/workflow_instance.hpp"

namespace reprise::worker {

WorkflowTaskRunner::WorkflowTaskRunner(Connection& connection, const WorkflowRegistry& workflows, StickyCache& cache,
                                       detail::Blobs& blobs, WorkflowTaskOptions options)
    : connection_(connection), workflows_(workflows), cache_(cache), blobs_(blobs), options_(std::move(options)) {}

void WorkflowTaskRunner::log(const std::string& line) const {
  if (options_.log) {
    options_.log(line);
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

StickyCache::Lease WorkflowTaskRunner::acquire(const std::string& run_id) {
  if (!options_.wait_for_lease) return cache_.acquire(run_id);
  while (true) {
    if (std::optional<StickyCache::Lease> lease = cache_.try_acquire(run_id)) return std::move(*lease);
    options_.wait_for_lease();
  }
}

void WorkflowTaskRunner::run(const v1::PollWorkflowTaskResponse& task) {
  if (task.queries_size() > 0) {
    // A query has no workflow task to fail: an answer the server no longer
    // waits for (the query timed out, the server restarted) is only logged.
    try {
      answer_query(task);
    } catch (const std::exception& e) {
      log("level=warn msg=\"query answer not delivered\" workflow_id=" + task.workflow_execution().workflow_id() +
          " reason=\"" + e.what() + "\"");
    }
    return;
  }
  std::optional<TaskFailure> failure;
  try {
    failure = complete(task);
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
  log("level=warn msg=\"workflow task failed\" workflow_id=" + task.workflow_execution().workflow_id() +
      " run_id=" + task.workflow_execution().run_id() + " cause=" + v1::WorkflowTaskFailedCause_Name(failure->cause) +
      " reason=\"" + failure->message + "\"");
  v1::FailWorkflowTaskRequest r;
  r.set_task_token(task.task_token());
  r.set_cause(failure->cause);
  r.mutable_failure()->set_message(std::move(failure->message));
  r.mutable_failure()->set_source("cpp-sdk");
  r.set_identity(options_.identity);
  connection_.fail_workflow_task(r);
}

std::optional<WorkflowTaskRunner::TaskFailure> WorkflowTaskRunner::complete(const v1::PollWorkflowTaskResponse& task) {
  const std::string& type = task.workflow_type().name();
  auto starter = workflows_.find(type);
  if (starter == workflows_.end()) {
    return TaskFailure{v1::WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_CODE_ERROR,
                       "workflow '" + type + "' is not registered with worker " + options_.identity};
  }
  const std::string& run_id = task.workflow_execution().run_id();
  const auto received = options_.local_activities ? options_.local_activities->now() : std::chrono::steady_clock::now();
  // This task alone holds the run's instance until it gives it back.
  StickyCache::Lease lease = acquire(run_id);
  std::unique_ptr<WorkflowInstance> instance = lease.take();
  // The cached instance serves the task that continues it; any other task
  // replays from the start (a sticky one whose workflow was evicted, or
  // never here, reads the events before its own).
  const int64_t first = task.history().events_size() > 0 ? task.history().events(0).event_id() : 1;
  const bool replay = !instance || instance->last_event_id() + 1 != first;
  if (replay) {
    instance = std::make_unique<WorkflowInstance>(type, starter->second, options_.panic_policy);
    instance->set_execution(task.workflow_execution().workflow_id(), run_id);
    instance->set_blobs(&blobs_);
  }
  const auto applying = std::chrono::steady_clock::now();
  TaskHistory history(connection_, task, instance->last_event_id() + 1, options_.history_page_events);
  ApplyResult activation = history.apply([&instance](const v1::History& chunk) { return instance->apply(chunk); });
  if (options_.metrics != nullptr) {
    (replay ? options_.metrics->sticky_cache_miss : options_.metrics->sticky_cache_hit).inc();
    if (replay) options_.metrics->replay_latency.observe(std::chrono::steady_clock::now() - applying);
  }
  // Local activities keep the task until 80 % of its timeout (Temporal's
  // share); then it completes with what it has and asks for the next task
  // at once, which waits for them on.
  const bool local_pending = activation && !instance->local_activities().empty();
  if (local_pending && options_.local_activities == nullptr) {
    activation = Status::failed_precondition("workflow '" + type + "' ran a local activity, and this worker runs none");
  }
  const bool keep_alive =
      local_pending && options_.local_activities != nullptr &&
      run_local_activities(*instance, activation, received + instance->workflow_task_timeout() * 4 / 5);
  if (!activation) {
    lease.release(nullptr);  // the instance is dropped: the retry replays afresh
    return TaskFailure{activation.nondeterministic() ? v1::WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISM
                                                     : v1::WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_CODE_ERROR,
                       activation.status().message()};
  }
  v1::CompleteWorkflowTaskRequest done;
  done.set_task_token(task.task_token());
  done.set_force_create_new_workflow_task(keep_alive);
  done.set_identity(options_.identity);
  // Threads held for eager activities; the ones the server starts no task
  // for (or all, when the answer fails) are given back on the way out.
  struct HeldThreads {
    EagerActivities* eager;
    int count = 0;
    ~HeldThreads() {
      for (; count > 0; --count) eager->release();
    }
  } held{options_.eager_activities};
  for (auto& c : activation->commands) {
    blobs_.offload(c);
    if (ask_eager(c)) ++held.count;
    *done.add_commands() = std::move(c);
  }
  const bool keep = !options_.sticky_queue.empty() && !instance->finished();
  if (keep) done.mutable_sticky_attributes()->mutable_worker_task_queue()->set_name(options_.sticky_queue);
  // Back in the cache before the answer: the run's next task may reach
  // another thread as soon as the server has the answer.
  lease.release(keep ? std::move(instance) : nullptr);
  if (options_.metrics != nullptr) options_.metrics->sticky_cache_size.set(static_cast<double>(cache_.size()));
  try {
    v1::CompleteWorkflowTaskResponse answer = connection_.complete_workflow_task(done);
    for (v1::PollActivityTaskResponse& activity : *answer.mutable_activity_tasks()) {
      // Started for this worker: run it even past the threads held (a
      // server bug), since the attempt would otherwise sit until it times out.
      if (options_.eager_activities == nullptr) break;
      if (held.count > 0) --held.count;
      options_.eager_activities->run(std::move(activity));
    }
  } catch (const RpcError& e) {
    // Not recorded: the kept instance is ahead of history and must not serve the retry.
    cache_.evict(run_id);
    // ABORTED: the server took the answer and applied none of it because
    // events arrived while the workflow tried to close; it failed the task
    // itself and a fresh task will deliver them. Failing the task again
    // would only be refused.
    if (e.code() != static_cast<int>(StatusCode::kAborted)) throw;
    log("level=info msg=\"workflow task answer not applied\" workflow_id=" + task.workflow_execution().workflow_id() +
        " run_id=" + run_id + " reason=\"" + e.what() + "\"");
  } catch (...) {
    cache_.evict(run_id);
    throw;
  }
  return std::nullopt;
}

bool WorkflowTaskRunner::run_local_activities(WorkflowInstance& instance, ApplyResult& activation,
                                              std::chrono::steady_clock::time_point deadline) {
  for (auto round = instance.local_activities(); !round.empty(); round = instance.local_activities()) {
    for (const auto& call : round) {
      if (!call->execution())
        call->set_execution(options_.local_activities->start(instance.info(), call->seq(), call->request()));
    }
    std::vector<LocalActivityOutcome> outcomes;
    for (const auto& call : round) {
      if (!call->execution()->wait_until(deadline)) return true;
      std::optional<LocalActivityOutcome> outcome = call->execution()->outcome();
      if (!outcome) {
        activation = Status::unavailable("the worker stopped while local activity '" +
                                         call->request().activity_type().name() + "' waited to retry");
        return false;
      }
      outcomes.push_back(std::move(*outcome));
    }
    // Recorded by this task's answer: a task that replays without it runs them again.
    for (const auto& call : round) options_.local_activities->taken(instance.info(), call->seq());
    activation = instance.resolve_local_activities(outcomes);
    if (!activation) return false;
  }
  return false;
}

bool WorkflowTaskRunner::ask_eager(v1::Command& command) {
  if (options_.eager_activities == nullptr || command.command_type() != v1::COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK) {
    return false;
  }
  v1::ScheduleActivityTaskCommandAttributes& a = *command.mutable_schedule_activity_task();
  // An empty queue is the workflow's, which this worker polls.
  if (!a.task_queue().name().empty() && a.task_queue().name() != options_.task_queue) return false;
  if (!options_.eager_activities->reserve(a.activity_type().name())) return false;
  a.set_request_eager_execution(true);
  return true;
}

void WorkflowTaskRunner::answer_query(const v1::PollWorkflowTaskResponse& task) {
  v1::CompleteWorkflowTaskRequest r;
  r.set_task_token(task.task_token());
  r.set_identity(options_.identity);
  // A fresh replay of the tasks history shows completed: the cached
  // instance may be busy with a workflow task on another thread, and the
  // task in flight (the query's history may end with its
  // WorkflowTaskStarted) must not run here: its side effects and log lines
  // are its own, and its state may never come to exist.
  auto starter = workflows_.find(task.workflow_type().name());
  std::unique_ptr<WorkflowInstance> instance;
  Status replayed = Status::not_found("workflow '" + task.workflow_type().name() + "' is not registered with worker " +
                                      options_.identity);
  if (starter != workflows_.end()) {
    instance = std::make_unique<WorkflowInstance>(task.workflow_type().name(), starter->second);
    instance->set_execution(task.workflow_execution().workflow_id(), task.workflow_execution().run_id());
    instance->set_blobs(&blobs_);
    try {
      TaskHistory history(connection_, task, 1, options_.history_page_events);
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
  connection_.complete_workflow_task(r);
}

}  // namespace reprise::worker
