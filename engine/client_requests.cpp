// The client side of the workflow service: start (and signal-with-start),
// signal, cancel, terminate, describe and list. Requests that name a
// workflow id alone act on its current run (Engine::transition_named).
#include "engine/engine.hpp"
#include "engine/execution/workflow_id_reuse.hpp"
#include "engine/log.hpp"
#include "engine/request_validation.hpp"
#include "history/enum_name.hpp"
#include "reprise/detail/proto_time.hpp"

namespace reprise::engine {

namespace {

Status check_start_request(const v1::StartWorkflowRequest& request, const EngineConfig& config) {
  if (request.workflow_id().empty()) return Status::invalid_argument("workflow_id is required");
  if (request.workflow_id().size() > config.max_id_length) {
    return Status::invalid_argument("workflow_id is longer than " + std::to_string(config.max_id_length) + " bytes");
  }
  return Status::ok();
}

}  // namespace

void Engine::start_workflow(v1::StartWorkflowRequest request, Reply<v1::StartWorkflowResponse> reply) {
  // Wrapped before admission: the request's slot goes when the start is
  // answered, not when the result is.
  reply = answer_with_result(request, std::move(reply));
  if (!admit(reply)) return;
  if (Status s = validate_request(request); !s) return reply(s);
  std::string ns = request.namespace_();
  if (Status s = check_namespace(ns); !s) return reply(s);
  if (Status s = check_start_request(request, options_.config); !s) return reply(s);
  after_offload<v1::StartWorkflowRequest>(ns, std::move(request), reply,
                                          [this, ns, reply](v1::StartWorkflowRequest& request, bool) {
                                            start_run(ns, std::move(request), std::nullopt, reply);
                                          });
}

void Engine::signal_with_start(v1::SignalWithStartRequest request, Reply<v1::StartWorkflowResponse> reply) {
  reply = answer_with_result(request.start(), std::move(reply));
  if (!admit(reply)) return;
  if (Status s = validate_request(request); !s) return reply(s);
  std::string ns = request.start().namespace_();
  if (Status s = check_namespace(ns); !s) return reply(s);
  if (Status s = check_start_request(request.start(), options_.config); !s) return reply(s);
  if (request.signal_name().empty()) return reply(Status::invalid_argument("signal_name is required"));
  after_offload<v1::SignalWithStartRequest>(
      ns, std::move(request), reply, [this, ns, reply](v1::SignalWithStartRequest& request, bool) {
        v1::SignalWorkflowRequest signal;
        signal.set_namespace_(ns);
        signal.mutable_workflow_execution()->set_workflow_id(request.start().workflow_id());
        signal.set_signal_name(request.signal_name());
        *signal.mutable_input() = request.signal_input();
        signal.set_identity(request.start().identity());
        signal.set_request_id(request.start().request_id());
        start_run(ns, std::move(*request.mutable_start()), std::move(signal), reply);
      });
}

void Engine::start_run(std::string ns, v1::StartWorkflowRequest request,
                       std::optional<v1::SignalWorkflowRequest> signal, Reply<v1::StartWorkflowResponse> reply,
                       const RunLineage& lineage) {
  // Starts of one workflow id are serialized on the id itself (empty run).
  const ExecutionKey id_key{ns, request.workflow_id(), ""};
  OperationRef in_flight = begin_op();
  if (!in_flight) return reply(Status::unavailable("the server is shutting down"));
  auto step = [this, ns, request = std::move(request), signal = std::move(signal), reply, lineage,
               in_flight](ExecutionSerializer::Done done) {
    auto answer = [reply, done, in_flight](Result<v1::StartWorkflowResponse> r) {
      reply(std::move(r));
      done();
    };
    std::string expected_run;
    Result<CurrentRun> current = store_.get_current_run(ns, request.workflow_id());
    if (current) {
      if (signal && current->status == v1::WORKFLOW_EXECUTION_STATUS_RUNNING) {
        // Closing a run goes through its own serializer, not the id's: if it
        // closed meanwhile, the signal fails and the caller may retry.
        const ExecutionKey running{ns, request.workflow_id(), current->run_id};
        return transition(
            running,
            [signal](MutableState& ms) {
              ms.expect_claim_checks();
              return to_done(
                  ms.signal(signal->signal_name(), signal->input(), signal->identity(), signal->request_id()));
            },
            {},
            [answer, run_id = current->run_id](Result<Done> r) {
              if (!r) return answer(r.status());
              v1::StartWorkflowResponse signaled;
              signaled.set_run_id(run_id);
              signaled.set_started(false);
              answer(signaled);
            },
            Unreadable::kFail, Origin::kRequest);
      }
      if (!request.request_id().empty() && current->start_request_id == request.request_id()) {
        v1::StartWorkflowResponse same;
        same.set_run_id(current->run_id);
        same.set_started(false);
        return answer(same);
      }
      if (current->status == v1::WORKFLOW_EXECUTION_STATUS_RUNNING) {
        return answer(Status::already_exists("workflow id '" + request.workflow_id() + "' is already running as run " +
                                             current->run_id));
      }
      if (!workflow_id_reusable(request.workflow_id_reuse_policy(), current->status)) {
        return answer(Status::already_exists("workflow id '" + request.workflow_id() + "' was used by run " +
                                             current->run_id + " (" + enum_name(current->status) +
                                             ") and the reuse policy does not allow another"));
      }
      expected_run = current->run_id;
    } else if (current.status().code() != StatusCode::kNotFound) {
      return answer(current.status());
    }
    const ExecutionKey key{ns, request.workflow_id(), new_run_id()};
    MutableState ms(key, clock_.now(), options_.config);
    ms.expect_claim_checks();  // cheap for a start: one small state to look through
    if (Status s = ms.start(request, lineage); !s) return answer(s);
    if (signal) {
      if (Status s = ms.signal(signal->signal_name(), signal->input(), signal->identity(), signal->request_id()); !s) {
        return answer(s);
      }
    }
    // Eager start: the caller's own worker runs the first task.
    std::optional<MutableState::EagerWorkflowTask> eager;
    if (request.request_eager_execution()) eager = ms.start_eager_workflow_task("", request.identity());
    thread_local history::EventBatchCodec codec;
    Result<Transition> t = ms.finish(codec);
    if (!t) return answer(t.status());
    t->current_runs.push_back(
        {{ns, key.workflow_id, key.run_id, v1::WORKFLOW_EXECUTION_STATUS_RUNNING, request.request_id()}, expected_run});
    commit(std::move(*t), [this, answer, key, eager = std::move(eager),
                           type = request.workflow_type().name()](Result<CommitResult> r) mutable {
      if (!r) return answer(r.status());
      log::info("workflow started", {{"workflow_id", key.workflow_id}, {"run_id", key.run_id}, {"type", type}});
      const std::string& run_id = key.run_id;
      v1::StartWorkflowResponse response;
      response.set_run_id(run_id);
      response.set_started(true);
      if (auto task = hand_out_eager(std::move(eager))) *response.mutable_eager_workflow_task() = std::move(*task);
      answer(response);
    });
  };
  if (!serializer_.run(id_key, std::move(step), options_.max_waiting_per_execution)) reply(execution_busy(id_key));
}

void Engine::signal_workflow(v1::SignalWorkflowRequest request, Reply<v1::SignalWorkflowResponse> reply) {
  if (!admit(reply)) return;
  if (Status s = validate_request(request); !s) return reply(s);
  TaskRunner& pool = pool_for(request);
  on_pool(pool, reply, [this, request = std::move(request), reply]() mutable {
    signal_blocking(std::move(request), std::move(reply));
  });
}

void Engine::signal_blocking(v1::SignalWorkflowRequest request, Reply<v1::SignalWorkflowResponse> reply) {
  std::string ns = request.namespace_();
  if (Status s = check_namespace(ns); !s) return reply(s);
  Result<bool> refs = claim_check_.offload(request, ns);
  if (!refs) return reply(refs.status());
  transition_named(
      ns, request.workflow_execution(),
      [request, refs = *refs](MutableState& ms) {
        if (refs) ms.expect_claim_checks();
        return to_done(ms.signal(request.signal_name(), request.input(), request.identity(), request.request_id()));
      },
      [reply](Result<Done> r) {
        if (!r) return reply(r.status());
        reply(v1::SignalWorkflowResponse());
      });
}

void Engine::request_cancel_workflow(v1::RequestCancelWorkflowRequest request,
                                     Reply<v1::RequestCancelWorkflowResponse> reply) {
  if (!admit(reply)) return;
  if (Status s = validate_request(request); !s) return reply(s);
  std::string ns = request.namespace_();
  if (Status s = check_namespace(ns); !s) return reply(s);
  on_read_pool(reply, [this, ns = std::move(ns), request = std::move(request), reply]() mutable {
    cancel_blocking(std::move(ns), std::move(request), std::move(reply));
  });
}

void Engine::cancel_blocking(std::string ns, v1::RequestCancelWorkflowRequest request,
                             Reply<v1::RequestCancelWorkflowResponse> reply) {
  transition_named(
      ns, request.workflow_execution(),
      [request](MutableState& ms) { return to_done(ms.request_cancel(request.reason(), request.identity())); },
      [reply](Result<Done> r) {
        if (!r) return reply(r.status());
        reply(v1::RequestCancelWorkflowResponse());
      });
}

void Engine::terminate_workflow(v1::TerminateWorkflowRequest request, Reply<v1::TerminateWorkflowResponse> reply) {
  if (!admit(reply)) return;
  if (Status s = validate_request(request); !s) return reply(s);
  TaskRunner& pool = pool_for(request);
  on_pool(pool, reply, [this, request = std::move(request), reply]() mutable {
    terminate_blocking(std::move(request), std::move(reply));
  });
}

void Engine::terminate_blocking(v1::TerminateWorkflowRequest request, Reply<v1::TerminateWorkflowResponse> reply) {
  std::string ns = request.namespace_();
  if (Status s = check_namespace(ns); !s) return reply(s);
  Result<bool> refs = claim_check_.offload(request, ns);
  if (!refs) return reply(refs.status());
  transition_named(
      ns, request.workflow_execution(),
      [request, refs = *refs](MutableState& ms) {
        if (refs) ms.expect_claim_checks();
        return to_done(ms.terminate(request.reason(), request.details(), request.identity()));
      },
      [reply](Result<Done> r) {
        if (!r) return reply(r.status());
        reply(v1::TerminateWorkflowResponse());
      },
      Unreadable::kSalvage);
}

void Engine::describe_workflow(v1::DescribeWorkflowRequest request, Reply<v1::DescribeWorkflowResponse> reply) {
  if (Status s = validate_request(request); !s) return reply(s);
  on_read_pool(reply, [this, request = std::move(request), reply]() mutable {
    describe_blocking(std::move(request), std::move(reply));
  });
}

void Engine::describe_blocking(v1::DescribeWorkflowRequest request, Reply<v1::DescribeWorkflowResponse> reply) {
  Result<LoadedExecution> loaded = load_execution(request.namespace_(), request.workflow_execution());
  if (!loaded) return reply(loaded.status());
  const ExecutionKey& key = loaded->key;
  const ExecutionRecord& record = loaded->record;
  const internal::ExecutionState& state = loaded->state;
  v1::DescribeWorkflowResponse out;
  auto* info = out.mutable_info();
  info->mutable_execution()->set_workflow_id(key.workflow_id);
  info->mutable_execution()->set_run_id(key.run_id);
  *info->mutable_type() = state.workflow_type();
  *info->mutable_task_queue() = state.task_queue();
  info->set_status(state.status());
  *info->mutable_start_time() = state.start_time();
  if (state.has_close_time()) *info->mutable_close_time() = state.close_time();
  info->set_history_length(record.next_event_id - 1);
  info->set_history_size_bytes(state.history_bytes());
  for (const auto& [scheduled, a] : state.activities()) {
    auto* p = out.add_pending_activities();
    p->set_activity_id(a.activity_id());
    *p->mutable_activity_type() = a.activity_type();
    p->set_started(a.started());
    p->set_attempt(a.attempt());
    *p->mutable_last_failure() = a.last_failure();
    *p->mutable_heartbeat_details() = a.heartbeat_details();
    if (a.has_last_heartbeat_time()) *p->mutable_last_heartbeat_time() = a.last_heartbeat_time();
    if (a.has_next_attempt_time()) *p->mutable_next_attempt_time() = a.next_attempt_time();
    p->set_cancel_requested(a.cancel_requested());
    p->set_scheduled_event_id(scheduled);
  }
  for (const auto& [id, t] : state.timers()) {
    auto* p = out.add_pending_timers();
    p->set_timer_id(id);
    *p->mutable_fire_time() = t.fire_time();
    p->set_started_event_id(t.started_event_id());
  }
  for (const auto& [initiated, c] : state.children()) {
    auto* p = out.add_pending_children();
    p->set_workflow_id(c.workflow_id());
    p->set_run_id(c.run_id());
    *p->mutable_workflow_type() = c.workflow_type();
    p->set_initiated_event_id(initiated);
    p->set_parent_close_policy(c.parent_close_policy());
  }
  if (state.has_parent_execution()) *info->mutable_parent_execution() = state.parent_execution();
  if (state.has_last_workflow_task_failure()) {
    *out.mutable_last_workflow_task_failure() = state.last_workflow_task_failure();
  }
  out.set_workflow_task_attempt(state.workflow_task_attempt());
  out.set_server_problem(store_.write_problem());
  reply(out);
}

void Engine::list_workflows(v1::ListWorkflowsRequest request, Reply<v1::ListWorkflowsResponse> reply) {
  if (Status s = validate_request(request); !s) return reply(s);
  std::string ns = request.namespace_();
  if (Status s = check_namespace(ns); !s) return reply(s);
  VisibilityQuery q;
  q.namespace_id = ns;
  if (!request.workflow_type().empty()) q.workflow_type = request.workflow_type();
  if (!request.task_queue().empty()) q.task_queue = request.task_queue();
  if (request.status() != v1::WORKFLOW_EXECUTION_STATUS_UNSPECIFIED) q.status = request.status();
  if (request.has_started_after()) q.started_after = to_time(request.started_after());
  if (request.has_started_before()) q.started_before = to_time(request.started_before());
  q.workflow_id_prefix = request.workflow_id_prefix();
  q.page_size = request.page_size() > 0 ? request.page_size() : 100;
  q.page_token = request.next_page_token();
  on_read_pool(reply, [this, q = std::move(q), reply]() mutable { list_blocking(std::move(q), std::move(reply)); });
}

void Engine::list_blocking(VisibilityQuery q, Reply<v1::ListWorkflowsResponse> reply) {
  Result<VisibilityPage> page = store_.list_executions(q);
  if (!page) return reply(page.status());
  v1::ListWorkflowsResponse out;
  for (const VisibilityRecord& r : page->records) {
    auto* info = out.add_executions();
    info->mutable_execution()->set_workflow_id(r.key.workflow_id);
    info->mutable_execution()->set_run_id(r.key.run_id);
    info->mutable_type()->set_name(r.workflow_type);
    info->mutable_task_queue()->set_name(r.task_queue);
    info->set_status(r.status);
    set_time(info->mutable_start_time(), r.start_time);
    if (r.close_time) set_time(info->mutable_close_time(), *r.close_time);
  }
  out.set_next_page_token(page->next_page_token);
  reply(out);
}

}  // namespace reprise::engine
