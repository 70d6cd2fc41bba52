// Queries: a client asks a running (or closed) workflow for a value computed
// from its state. Nothing is written: the engine puts an in-memory query task
// on the workflow's task queue, a worker takes it with the history's first
// page, reads the rest (up to where the history ended when the task was
// handed out), replays, runs the query handler and answers through the
// task's token. The answer goes straight back to the waiting client; a query
// that no worker answers in time (its timeout, cut to max_query_wait) ends
// with DEADLINE_EXCEEDED. A query of a run whose first workflow task has not
// completed waits for that task before it goes to a worker, as Temporal's
// server makes it wait: before, there is no state a query could read, and a
// worker could only make one by running the code of the task in flight (its
// side effects included). Waiting queries are bounded by max_pending_queries,
// apart from the requests that change workflows. Query tasks are
// lost on restart, like the client calls waiting for them.
#include "engine/engine.hpp"
#include "engine/request_validation.hpp"
#include "history/stored_proto.hpp"
#include "reprise/detail/proto_time.hpp"

namespace reprise::engine {

namespace {

constexpr auto kDefaultQueryTimeout = std::chrono::seconds(10);

std::string query_key(uint64_t id) { return "q" + std::to_string(id); }

}  // namespace

void Engine::query_workflow(v1::QueryWorkflowRequest request, Reply<v1::QueryWorkflowResponse> reply) {
  // Its own door: a query may wait long for a worker, and must not hold a
  // slot that a request changing a workflow needs meanwhile.
  if (!admit_to(query_admission_, "queries waiting for an answer", "--max-pending-queries", reply)) return;
  if (Status s = validate_request(request); !s) return reply(s);
  if (request.query_type().empty()) return reply(Status::invalid_argument("query_type is required"));
  on_read_pool(reply, [this, request = std::move(request), reply]() mutable {
    query_blocking(std::move(request), std::move(reply));
  });
}

void Engine::query_blocking(v1::QueryWorkflowRequest request, Reply<v1::QueryWorkflowResponse> reply) {
  Result<LoadedExecution> loaded = load_execution(request.namespace_(), request.workflow_execution());
  if (!loaded) return reply(loaded.status());
  const ExecutionKey& key = loaded->key;
  const internal::ExecutionState& state = loaded->state;

  const auto asked = to_nanos(request.timeout()).count() > 0
                         ? std::chrono::duration_cast<std::chrono::milliseconds>(to_nanos(request.timeout()))
                         : std::chrono::milliseconds(kDefaultQueryTimeout);
  // Cut to the server's bound, so a query's slot is given back in time.
  const bool clamped = asked > options_.max_query_wait;
  const auto timeout = clamped ? options_.max_query_wait : asked;
  OperationRef in_flight = begin_op();
  if (!in_flight) return reply(Status::unavailable("the server is shutting down"));
  uint64_t id = 0;
  const int64_t task_id = memory_task_id();
  {
    std::lock_guard lock(query_mu_);
    id = next_query_id_++;
    PendingQuery& q = queries_[id];
    q.op = std::move(in_flight);
    q.execution = key;
    q.query.set_query_type(request.query_type());
    *q.query.mutable_args() = request.args();
    q.reply = std::move(reply);
    const std::string queue = state.task_queue().name();
    q.deadline = deadlines_.schedule(deadlines_.now() + timeout, [this, id, task_id, key, queue, timeout, clamped] {
      if (auto expired = take_query(id)) {
        const bool waited_for_first_task = expired->first_task_watch != 0;
        if (waited_for_first_task) unwatch(key, expired->first_task_watch);
        matching_.remove({key.namespace_id, TaskKind::kWorkflowTask, queue}, task_id);
        const std::string what = waited_for_first_task
                                     ? "query '" + expired->query.query_type() +
                                           "' waited for the run's first workflow task, which did not complete"
                                     : "no worker answered query '" + expired->query.query_type() + "'";
        expired->reply(Status::deadline_exceeded(
            what + " within " + std::to_string(timeout.count()) + " ms" +
            (clamped ? ", the server's limit (--max-query-wait-ms), shorter than the query's timeout" : "") +
            " (is a worker polling task queue '" + queue + "'?)"));
      }
    });
  }
  if (state.status() == v1::WORKFLOW_EXECUTION_STATUS_RUNNING && state.last_completed_started_event_id() == 0) {
    return dispatch_query_after_first_task(id, task_id, key, state.task_queue().name());
  }
  internal::TaskPayload payload;
  payload.set_query_id(id);
  offer({task_id, TaskKind::kWorkflowTask, state.task_queue().name(), key, payload.SerializeAsString()});
}

void Engine::dispatch_query_after_first_task(uint64_t id, int64_t task_id, const ExecutionKey& key,
                                             const std::string& queue) {
  // Watch before reading: a completion committed after the read would
  // otherwise wake nobody until the query's deadline. A watch wakes once.
  const uint64_t watch_id = watch(key, [this, id, task_id, key, queue] {
    executor_.post([this, id, task_id, key, queue] { dispatch_query_after_first_task(id, task_id, key, queue); });
  });
  // Records the watch (0: none left) on the query; false once the query was
  // answered, timed out or dropped by shutdown.
  auto note_watch = [this, id](uint64_t watching) {
    std::lock_guard lock(query_mu_);
    auto it = queries_.find(id);
    if (it == queries_.end()) return false;
    it->second.first_task_watch = watching;
    return true;
  };
  if (!note_watch(watch_id)) return unwatch(key, watch_id);
  Result<ExecutionRecord> record = store_.get_execution(key);
  internal::ExecutionState state;
  const bool readable = record && history::parse_stored(record->state, state);
  const bool waiting = readable && record->status == v1::WORKFLOW_EXECUTION_STATUS_RUNNING &&
                       state.last_completed_started_event_id() == 0;
  if (waiting) return;  // the watch looks again at the run's next change
  unwatch(key, watch_id);
  if (!note_watch(0)) return;
  if (!readable) {
    // Deleted by retention meanwhile, or a store error.
    if (auto q = take_query(id))
      q->reply(record ? Status::internal("the run's state does not parse") : record.status());
    return;
  }
  internal::TaskPayload payload;
  payload.set_query_id(id);
  offer({task_id, TaskKind::kWorkflowTask, queue, key, payload.SerializeAsString()});
}

std::optional<Engine::PendingQuery> Engine::take_query(uint64_t query_id) {
  std::lock_guard lock(query_mu_);
  auto it = queries_.find(query_id);
  if (it == queries_.end()) return std::nullopt;
  PendingQuery q = std::move(it->second);
  queries_.erase(it);
  return q;
}

void Engine::start_query_task(const TaskRecord& task, const internal::TaskPayload& payload, int page_events,
                              Reply<v1::PollWorkflowTaskResponse> reply, std::function<void()> poll_again) {
  v1::WorkflowQuery query;
  {
    std::lock_guard lock(query_mu_);
    auto it = queries_.find(payload.query_id());
    if (it == queries_.end()) return poll_again();  // answered or timed out meanwhile
    query = it->second.query;
  }
  Result<ExecutionRecord> record = store_.get_execution(task.execution);
  internal::ExecutionState state;
  if (!record || !history::parse_stored(record->state, state)) return poll_again();
  v1::PollWorkflowTaskResponse out;
  internal::TaskToken token;
  token.set_namespace_(task.execution.namespace_id);
  token.set_workflow_id(task.execution.workflow_id);
  token.set_run_id(task.execution.run_id);
  token.set_query_id(payload.query_id());
  token.set_query_epoch(query_epoch_);
  out.set_task_token(options_.config.task_tokens->encode(token));
  out.mutable_workflow_execution()->set_workflow_id(task.execution.workflow_id);
  out.mutable_workflow_execution()->set_run_id(task.execution.run_id);
  *out.mutable_workflow_type() = state.workflow_type();
  out.set_previous_started_event_id(state.last_completed_started_event_id());
  out.set_started_event_id(record->next_event_id - 1);
  (*out.mutable_queries())[query_key(payload.query_id())] = std::move(query);
  // The history as it is now; later pages stop there, however it grows.
  internal::HistoryPageToken from;
  from.set_next_event_id(1);
  from.set_last_event_id(record->next_event_id - 1);
  std::string next;
  if (Status s = task_history_page(task.execution, std::move(from), page_events, *out.mutable_history(), next); !s) {
    return reply(s);
  }
  out.set_next_page_token(std::move(next));
  reply(std::move(out));
}

std::optional<internal::TaskToken> Engine::query_token(const std::string& bytes) const {
  Result<internal::TaskToken> token = options_.config.task_tokens->decode(bytes);
  if (!token || token->query_id() == 0) return std::nullopt;
  return *token;
}

std::optional<Engine::PendingQuery> Engine::take_query(const internal::TaskToken& token) {
  if (token.query_epoch() != query_epoch_) return std::nullopt;
  std::lock_guard lock(query_mu_);
  auto it = queries_.find(token.query_id());
  if (it == queries_.end()) return std::nullopt;
  const ExecutionKey& asked = it->second.execution;
  if (asked.namespace_id != token.namespace_() || asked.workflow_id != token.workflow_id() ||
      asked.run_id != token.run_id()) {
    return std::nullopt;
  }
  PendingQuery q = std::move(it->second);
  queries_.erase(it);
  return q;
}

Status Engine::answer_query(const internal::TaskToken& token, const v1::CompleteWorkflowTaskRequest* completed,
                            const v1::FailWorkflowTaskRequest* failed) {
  std::optional<PendingQuery> q = take_query(token);
  if (!q) {
    return Status::not_found(
        "no query is waiting for this task token: it was answered or timed out, the server restarted since "
        "it was issued, or it names another workflow");
  }
  deadlines_.cancel(q->deadline);
  const std::string name = "query '" + q->query.query_type() + "'";
  if (failed != nullptr) {
    q->reply(Status::failed_precondition(name + " failed in the worker: " + failed->failure().message()));
  } else {
    auto it = completed->query_results().find(query_key(token.query_id()));
    if (it == completed->query_results().end()) {
      q->reply(Status::internal("the worker answered the query task without a result for " + name));
    } else if (!it->second.error_message().empty()) {
      q->reply(Status::invalid_argument(name + " failed: " + it->second.error_message()));
    } else {
      v1::QueryWorkflowResponse out;
      *out.mutable_result() = it->second.answer();
      q->reply(std::move(out));
    }
  }
  return Status::ok();
}

}  // namespace reprise::engine
