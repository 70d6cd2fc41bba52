// The worker side of the workflow service: polls for workflow and activity
// tasks, and the outcomes workers report on the tasks they hold (workflow
// task completion and failure, heartbeats, activity results).
#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "engine/queued_task.hpp"
#include "engine/request_validation.hpp"
#include "history/enum_name.hpp"
#include "history/stored_proto.hpp"
#include "reprise/detail/proto_time.hpp"

namespace reprise::engine {

namespace {

// The workflow task an activity's outcome wakes, started for the worker
// that reported it when that worker asked (its sticky queue) and the task
// would go to it.
std::optional<MutableState::EagerWorkflowTask> eager_after_activity(MutableState& ms, const std::string& sticky_queue,
                                                                    const std::string& identity) {
  if (sticky_queue.empty()) return std::nullopt;
  return ms.start_eager_workflow_task(sticky_queue, identity);
}

}  // namespace

void Engine::poll_workflow_task(v1::PollWorkflowTaskRequest request, Reply<v1::PollWorkflowTaskResponse> reply,
                                std::shared_ptr<PollTicket> ticket) {
  if (Status s = validate_request(request); !s) return reply(s);
  std::string ns = request.namespace_();
  if (Status s = check_namespace(ns); !s) return reply(s);
  if (request.task_queue().name().empty()) return reply(Status::invalid_argument("task_queue.name is required"));
  const int page_events = history_page_size(request.maximum_page_size());
  poll_task<v1::PollWorkflowTaskResponse>({{ns, TaskKind::kWorkflowTask, request.task_queue().name()},
                                           request.identity(),
                                           poll_deadline(),
                                           std::move(ticket),
                                           page_events,
                                           request.task_queue().kind() == v1::TASK_QUEUE_KIND_STICKY},
                                          std::move(reply), workflow_task_start(), workflow_task_fill(page_events));
}

Engine::StartTask<v1::PollWorkflowTaskResponse> Engine::workflow_task_start() {
  return [](MutableState& ms, const internal::TaskPayload& p, const std::string& who,
            v1::PollWorkflowTaskResponse& out) { return ms.start_workflow_task(p, who, out); };
}

Engine::FillTask<v1::PollWorkflowTaskResponse> Engine::workflow_task_fill(int page_events) {
  return [this, page_events](const TaskRecord& task, const internal::TaskPayload& payload,
                             v1::PollWorkflowTaskResponse& out) {
    return fill_workflow_task(task.execution, payload.sticky(), page_events, out);
  };
}

Status Engine::fill_workflow_task(const ExecutionKey& execution, bool sticky, int page_events,
                                  v1::PollWorkflowTaskResponse& out) {
  // The sticky worker has the workflow cached up to its last task.
  internal::HistoryPageToken from;
  from.set_next_event_id(sticky ? out.previous_started_event_id() + 1 : 1);
  // A retry's own events, not written yet, go last.
  from.mutable_unwritten_events()->Swap(out.mutable_history()->mutable_events());
  from.set_last_event_id(from.unwritten_events().empty() ? out.started_event_id()
                                                         : from.unwritten_events(0).event_id() - 1);
  std::string next;
  REPRISE_RETURN_IF_ERROR(task_history_page(execution, std::move(from), page_events, *out.mutable_history(), next));
  out.set_next_page_token(std::move(next));
  return Status::ok();
}

void Engine::hold_result_with(MutableState& ms, MutableState::EagerWorkflowTask& eager) {
  if (options_.max_held_start.count() <= 0 || !ms.only_started_tasks()) return;
  // The worker is shown what a commit would have stored: nothing of the
  // change is, so every event of it comes as not yet written.
  v1::PollWorkflowTaskResponse task = eager.task;
  *task.mutable_history()->mutable_events() = {ms.unstored_events().begin(), ms.unstored_events().end()};
  if (Status s = fill_workflow_task(eager.execution, eager.sticky, history_page_size(0), task); !s) {
    // Committed instead, and handed out as hand_out_eager() can.
    log::warn("activity result not held: its workflow task's history could not be read",
              {{"workflow_id", eager.execution.workflow_id}, {"error", s.to_string()}});
    return;
  }
  // More than a page: the next page's token would carry the held events
  // (the result with them) and could outgrow what a token may hold.
  // Committed instead, the token carries only the started event.
  if (!task.next_page_token().empty()) return;
  eager.task = std::move(task);
  eager.held = true;
  ms.request_hold();
}

std::optional<v1::PollWorkflowTaskResponse> Engine::hand_out_eager(
    std::optional<MutableState::EagerWorkflowTask> eager) {
  if (!eager) return std::nullopt;
  if (eager->held) return std::move(eager->task);  // its history was read before the hold
  if (Status s = fill_workflow_task(eager->execution, eager->sticky, history_page_size(0), eager->task); !s) {
    // The task is started and its history could not be read: it is not
    // handed out, and its start-to-close timeout retries it, as for a poll
    // whose answer was lost. The request it rode on was committed and is
    // answered as such.
    log::warn("eager workflow task not handed out",
              {{"workflow_id", eager->execution.workflow_id}, {"error", s.to_string()}});
    return std::nullopt;
  }
  return std::move(eager->task);
}

void Engine::poll_activity_task(v1::PollActivityTaskRequest request, Reply<v1::PollActivityTaskResponse> reply,
                                std::shared_ptr<PollTicket> ticket) {
  if (Status s = validate_request(request); !s) return reply(s);
  std::string ns = request.namespace_();
  if (Status s = check_namespace(ns); !s) return reply(s);
  if (request.task_queue().name().empty()) return reply(Status::invalid_argument("task_queue.name is required"));
  poll_task<v1::PollActivityTaskResponse>({{ns, TaskKind::kActivityTask, request.task_queue().name()},
                                           request.identity(),
                                           poll_deadline(),
                                           std::move(ticket)},
                                          std::move(reply), activity_task_start(), activity_task_fill());
}

Engine::StartTask<v1::PollActivityTaskResponse> Engine::activity_task_start() {
  return [](MutableState& ms, const internal::TaskPayload& p, const std::string& who,
            v1::PollActivityTaskResponse& out) { return ms.start_activity(p, who, out); };
}

Engine::FillTask<v1::PollActivityTaskResponse> Engine::activity_task_fill() {
  return [this](const TaskRecord& task, const internal::TaskPayload& payload, v1::PollActivityTaskResponse& out) {
    // The input lives in the scheduled event, not in the state: read it.
    v1::History scheduled;
    int64_t next = 0;
    REPRISE_RETURN_IF_ERROR(
        fill_history(task.execution, payload.scheduled_event_id(), 1, scheduled, next, payload.scheduled_event_id()));
    if (scheduled.events_size() == 1) *out.mutable_input() = scheduled.events(0).activity_task_scheduled().input();
    return Status::ok();
  };
}

template <typename Response>
void Engine::poll_task(PollSpec spec, Reply<Response> reply, StartTask<Response> start, FillTask<Response> fill) {
  auto again = [=, this] { poll_task(spec, reply, start, fill); };
  const Matching::PollId id = matching_.poll(
      spec.queue, spec.deadline,
      [=, this](std::optional<TaskRecord> task) {
        if (!task) return reply(Response());
        if (spec.ticket && spec.ticket->canceled()) {
          // The poller went away: the task goes to the next one, untouched.
          matching_.add(std::move(*task));
          return reply(Response());
        }
        start_task(std::move(*task), spec, reply, start, fill, again);
      },
      spec.sticky);
  if (spec.ticket) spec.ticket->on_cancel([this, id] { matching_.cancel(id); });
}

template <typename Response>
void Engine::start_task(TaskRecord matched, const PollSpec& spec, Reply<Response> reply, StartTask<Response> start,
                        FillTask<Response> fill, std::function<void()> again) {
  // A task of a shard another node serves (this node owns its queue): that
  // node starts it.
  if (!serves(matched.execution)) return start_elsewhere(std::move(matched), spec, std::move(reply), std::move(again));
  auto task = std::make_shared<TaskRecord>(std::move(matched));
  internal::TaskPayload payload;
  payload.ParseFromString(task->payload);
  if constexpr (std::is_same_v<Response, v1::PollWorkflowTaskResponse>) {
    if (payload.query_id() != 0) return start_query_task(*task, payload, spec.page_events, reply, again);
  }
  // The task's outcome: the response to hand out and what the metrics
  // count of it, or none for a stale row.
  using Started = std::optional<std::pair<Response, EngineMetrics::TaskStart>>;
  transition(
      task->execution,
      [=, this](MutableState& ms) -> Result<Started> {
        Response response;
        Result<Applied> applied = start(ms, payload, spec.identity, response);
        if (!applied) return applied.status();
        if (*applied == Applied::kStale) return Started();
        return Started(std::in_place, std::move(response), metrics_.task_start(ms.state(), task->kind, payload));
      },
      [id = task->task_id](Transition& t) {
        if (id > 0) t.remove_tasks.push_back(id);  // memory-only tasks have no row
      },
      [=, this](Result<Started> started) mutable {
        if (!started && started.status().code() != StatusCode::kNotFound) {
          offer(*task);  // its row is still there: keep it available
          return reply(started.status());
        }
        // A stale row (or a vanished execution) was dropped: wait for the next.
        if (!started || !started->has_value()) return again();
        auto& [response, counted] = **started;
        metrics_.task_started(counted);
        if (Status s = fill(*task, payload, response); !s) return reply(s);
        reply(std::move(response));
      },
      Unreadable::kFail, Origin::kInternal, Hold::kStarts, *task);
}

template <typename Response>
void Engine::start_elsewhere(TaskRecord task, const PollSpec& spec, Reply<Response> reply,
                             std::function<void()> again) {
  // Its shard moved away and nothing hands this node other nodes' tasks:
  // the new owner hands it out from its own queues.
  if (options_.task_queue_peers == nullptr) return again();
  const std::string address = shards_ == nullptr ? "" : shards_->owner_address(shards_->shard_of(task.execution));
  if (address.empty()) {
    // No live node serves its shard now (its owner died, and no other has
    // taken it yet): the copy waits a moment, and the poll goes on.
    set_aside(std::move(task));
    return again();
  }
  internal::StartTaskRequest request;
  *request.mutable_task() = queued_task(task);
  request.set_identity(spec.identity);
  request.set_page_events(spec.page_events);
  request.set_credential(cluster_credential());
  OperationRef in_flight = begin_op();
  if (!in_flight) return reply(Status::unavailable("the server is shutting down"));
  options_.task_queue_peers->start(
      address, request,
      [this, task = std::move(task), reply = std::move(reply), again = std::move(again), address,
       in_flight](Result<internal::StartedTask> started) mutable {
        executor_.post([this, task = std::move(task), reply = std::move(reply), again = std::move(again), address,
                        started = std::move(started), in_flight]() mutable {
          if (!started) {
            // Whether it was started there is unknown: the copy waits a
            // moment and the poll goes on; the shard's node starts a task
            // at most once (a second start is stale).
            log::warn("task not started on its workflow's node",
                      {{"address", address}, {"error", started.status().to_string()}});
            set_aside(std::move(task));
            return again();
          }
          if (started->stale()) return again();
          Response response;
          if (!response.ParseFromString(started->response())) {
            return reply(Status::internal("the node at " + address + " answered a task that does not parse"));
          }
          reply(std::move(response));
        });
      });
}

void Engine::start_queued_task(internal::StartTaskRequest request, Reply<internal::StartedTask> reply) {
  Result<internal::TaskToken> signed_by = options_.config.task_tokens->decode(request.credential());
  if (!signed_by || signed_by->workflow_id() != kClusterCredentialName) {
    return reply(Status::permission_denied("a task start not signed by a node of this cluster"));
  }
  Result<TaskRecord> queued = task_record(request.task());
  if (!queued) return reply(queued.status());
  TaskRecord task = std::move(*queued);
  if (!serves(task.execution)) {
    return reply(Status::unavailable("this node no longer serves the workflow of the task"));
  }
  // This node's queue holds the task while it is pending: taking it out is
  // what makes this start the only one.
  if (!matching_.remove({task.execution.namespace_id, task.kind, task.queue}, task.task_id)) {
    internal::StartedTask stale;
    stale.set_stale(true);
    return reply(std::move(stale));
  }
  PollSpec spec{{task.execution.namespace_id, task.kind, task.queue},
                request.identity(),
                poll_deadline(),
                nullptr,
                history_page_size(request.page_events()),
                false};
  auto stale = [reply] {
    internal::StartedTask out;
    out.set_stale(true);
    reply(std::move(out));
  };
  auto answer = [reply](auto started) {
    if (!started) return reply(started.status());
    internal::StartedTask out;
    out.set_response(started->SerializeAsString());
    reply(std::move(out));
  };
  if (task.kind == TaskKind::kWorkflowTask) {
    start_task<v1::PollWorkflowTaskResponse>(
        std::move(task), spec, [answer](Result<v1::PollWorkflowTaskResponse> r) { answer(std::move(r)); },
        workflow_task_start(), workflow_task_fill(spec.page_events), stale);
  } else {
    start_task<v1::PollActivityTaskResponse>(
        std::move(task), spec, [answer](Result<v1::PollActivityTaskResponse> r) { answer(std::move(r)); },
        activity_task_start(), activity_task_fill(), stale);
  }
}

template <typename Response, typename T>
void Engine::on_task_token(const std::string& token_bytes, bool claim_checks,
                           std::function<Result<T>(MutableState&, const internal::TaskToken&)> op,
                           std::function<Result<Response>(T)> respond, Reply<Response> reply) {
  Result<internal::TaskToken> token = options_.config.task_tokens->decode(token_bytes);
  if (!token) return reply(token.status());
  const ExecutionKey key{token->namespace_(), token->workflow_id(), token->run_id()};
  transition(
      key,
      [token = *token, claim_checks, op](MutableState& ms) {
        if (claim_checks) ms.expect_claim_checks();
        return op(ms, token);
      },
      {},
      [reply, respond](Result<T> outcome) {
        if (!outcome) return reply(outcome.status());
        reply(respond(std::move(outcome).value()));
      },
      Unreadable::kFail, Origin::kRequest);
}

void Engine::complete_workflow_task(v1::CompleteWorkflowTaskRequest request,
                                    Reply<v1::CompleteWorkflowTaskResponse> reply) {
  if (!admit(reply)) return;
  if (Status s = validate_request(request); !s) return reply(s);
  if (auto query = query_token(request.task_token())) {
    if (Status s = answer_query(*query, &request, nullptr); !s) return reply(s);
    return reply(v1::CompleteWorkflowTaskResponse());
  }
  Result<std::string> ns = task_namespace(request.task_token());
  if (!ns) return reply(ns.status());
  after_offload<v1::CompleteWorkflowTaskRequest>(
      *ns, std::move(request), reply, [this, reply](v1::CompleteWorkflowTaskRequest& request, bool refs) {
        using Answer = MutableState::CompletionAnswer;
        on_task_token<v1::CompleteWorkflowTaskResponse, Answer>(
            request.task_token(), refs,
            [request](MutableState& ms, const internal::TaskToken& t) { return ms.complete_workflow_task(t, request); },
            [](Answer answer) -> Result<v1::CompleteWorkflowTaskResponse> {
              if (!answer.status) return answer.status;
              v1::CompleteWorkflowTaskResponse out;
              for (v1::PollActivityTaskResponse& task : answer.activity_tasks)
                *out.add_activity_tasks() = std::move(task);
              return out;
            },
            reply);
      });
}

void Engine::fail_workflow_task(v1::FailWorkflowTaskRequest request, Reply<v1::FailWorkflowTaskResponse> reply) {
  if (!admit(reply)) return;
  if (Status s = validate_request(request); !s) return reply(s);
  if (auto query = query_token(request.task_token())) {
    if (Status s = answer_query(*query, nullptr, &request); !s) return reply(s);
    return reply(v1::FailWorkflowTaskResponse());
  }
  Result<std::string> ns = task_namespace(request.task_token());
  if (!ns) return reply(ns.status());
  after_offload<v1::FailWorkflowTaskRequest>(
      *ns, std::move(request), reply, [this, reply](v1::FailWorkflowTaskRequest& request, bool refs) {
        on_task_token<v1::FailWorkflowTaskResponse, Done>(
            request.task_token(), refs,
            [request](MutableState& ms, const internal::TaskToken& t) -> Result<Done> {
              REPRISE_RETURN_IF_ERROR(ms.fail_workflow_task(t, request));
              // Blocked workflows are what an operator looks for: say why, every time.
              log::warn("workflow task failed", {{"workflow_id", t.workflow_id()},
                                                 {"run_id", t.run_id()},
                                                 {"attempt", std::to_string(t.attempt())},
                                                 {"cause", enum_name(request.cause())},
                                                 {"message", request.failure().message()}});
              return Done{};
            },
            [](Done) { return v1::FailWorkflowTaskResponse(); }, reply);
      });
}

void Engine::heartbeat_activity(v1::HeartbeatActivityRequest request, Reply<v1::HeartbeatActivityResponse> reply) {
  if (!admit(reply)) return;
  if (Status s = validate_request(request); !s) return reply(s);
  Result<std::string> ns = task_namespace(request.task_token());
  if (!ns) return reply(ns.status());
  after_offload<v1::HeartbeatActivityRequest>(*ns, std::move(request), reply,
                                              [this, reply](v1::HeartbeatActivityRequest& request, bool refs) {
                                                on_task_token<v1::HeartbeatActivityResponse, bool>(
                                                    request.task_token(), refs,
                                                    [request](MutableState& ms, const internal::TaskToken& t) {
                                                      return ms.heartbeat_activity(t, request.details());
                                                    },
                                                    [](bool cancel_requested) {
                                                      v1::HeartbeatActivityResponse out;
                                                      out.set_cancel_requested(cancel_requested);
                                                      return out;
                                                    },
                                                    reply);
                                              });
}

void Engine::complete_activity(v1::CompleteActivityRequest request, Reply<v1::CompleteActivityResponse> reply) {
  if (!admit(reply)) return;
  if (Status s = validate_request(request); !s) return reply(s);
  Result<std::string> ns = task_namespace(request.task_token());
  if (!ns) return reply(ns.status());
  after_offload<v1::CompleteActivityRequest>(
      *ns, std::move(request), reply, [this, reply](v1::CompleteActivityRequest& request, bool refs) {
        using Eager = std::optional<MutableState::EagerWorkflowTask>;
        on_task_token<v1::CompleteActivityResponse, Eager>(
            request.task_token(), refs,
            [this, request](MutableState& ms, const internal::TaskToken& t) -> Result<Eager> {
              Status recorded = ms.complete_activity(t, request.result(), request.identity());
              // Reported again while still held with its workflow task (the
              // task's answer was lost on its way): committing the held
              // change records it, and answers this report.
              if (recorded.code() == StatusCode::kNotFound && ms.holds_result_of(t, request.result())) return Eager{};
              REPRISE_RETURN_IF_ERROR(recorded);
              Eager eager = eager_after_activity(ms, request.eager_workflow_task_queue(), request.identity());
              if (eager && request.hold_with_workflow_task()) hold_result_with(ms, *eager);
              return eager;
            },
            [this](Eager eager) -> Result<v1::CompleteActivityResponse> {
              v1::CompleteActivityResponse out;
              out.set_result_held(eager && eager->held);
              if (auto task = hand_out_eager(std::move(eager))) *out.mutable_workflow_task() = std::move(*task);
              return out;
            },
            reply);
      });
}

void Engine::fail_activity(v1::FailActivityRequest request, Reply<v1::FailActivityResponse> reply) {
  if (!admit(reply)) return;
  if (Status s = validate_request(request); !s) return reply(s);
  Result<std::string> ns = task_namespace(request.task_token());
  if (!ns) return reply(ns.status());
  after_offload<v1::FailActivityRequest>(
      *ns, std::move(request), reply, [this, reply](v1::FailActivityRequest& request, bool refs) {
        using Eager = std::optional<MutableState::EagerWorkflowTask>;
        on_task_token<v1::FailActivityResponse, Eager>(
            request.task_token(), refs,
            [request](MutableState& ms, const internal::TaskToken& t) -> Result<Eager> {
              REPRISE_RETURN_IF_ERROR(
                  ms.fail_activity(t, request.failure(), request.last_heartbeat_details(), request.identity()));
              return eager_after_activity(ms, request.eager_workflow_task_queue(), request.identity());
            },
            [this](Eager eager) -> Result<v1::FailActivityResponse> {
              v1::FailActivityResponse out;
              if (auto task = hand_out_eager(std::move(eager))) *out.mutable_workflow_task() = std::move(*task);
              return out;
            },
            reply);
      });
}

void Engine::report_activity_canceled(v1::ReportActivityCanceledRequest request,
                                      Reply<v1::ReportActivityCanceledResponse> reply) {
  if (!admit(reply)) return;
  if (Status s = validate_request(request); !s) return reply(s);
  Result<std::string> ns = task_namespace(request.task_token());
  if (!ns) return reply(ns.status());
  after_offload<v1::ReportActivityCanceledRequest>(
      *ns, std::move(request), reply, [this, reply](v1::ReportActivityCanceledRequest& request, bool refs) {
        on_task_token<v1::ReportActivityCanceledResponse, Done>(
            request.task_token(), refs,
            [request](MutableState& ms, const internal::TaskToken& t) {
              return to_done(ms.report_activity_canceled(t, request.details(), request.identity()));
            },
            [](Done) { return v1::ReportActivityCanceledResponse(); }, reply);
      });
}

}  // namespace reprise::engine
