#include "engine/engine.hpp"

#include <climits>
#include <cstdio>

#include "engine/execution/workflow_id_reuse.hpp"
#include "engine/log.hpp"
#include "engine/request_validation.hpp"
#include "history/enum_name.hpp"
#include "history/proto_time.hpp"
#include "history/stored_proto.hpp"
#include "history/uuid.hpp"

namespace reprise::engine {

namespace {

constexpr const char* kDefaultNamespace = "default";
constexpr int kHistoryPageDefault = 1000;
// How far back a timer that keeps failing moves at most: parked, but still
// retried (and logged) now and then.
constexpr std::chrono::nanoseconds kMaxTimerPostpone = std::chrono::minutes(10);

}  // namespace

Status Engine::check_namespace(std::string& namespace_id) {
  if (namespace_id.empty()) namespace_id = kDefaultNamespace;
  if (namespace_id != kDefaultNamespace) {
    return Status::not_found("namespace '" + namespace_id + "' does not exist (this server has only 'default')");
  }
  return Status::ok();
}

namespace {

Status check_start_request(std::string& namespace_id, const v1::StartWorkflowRequest& request,
                           const EngineConfig& config) {
  REPRISE_RETURN_IF_ERROR(Engine::check_namespace(namespace_id));
  if (request.workflow_id().empty()) return Status::invalid_argument("workflow_id is required");
  if (request.workflow_id().size() > config.max_id_length) {
    return Status::invalid_argument("workflow_id is longer than " + std::to_string(config.max_id_length) + " bytes");
  }
  return Status::ok();
}

std::string encode_page(int64_t next_event_id) { return std::to_string(next_event_id); }

}  // namespace

Result<std::unique_ptr<Engine>> Engine::start(Store& store, EngineOptions options) {
  REPRISE_RETURN_IF_ERROR(options.config.history_limits.validate());
  if (options.executor_threads < 1) return Status::invalid_argument("executor_threads must be at least 1");
  std::unique_ptr<Engine> engine(new Engine(store, std::move(options)));
  // Rebuild the task queues from the durable task table.
  int64_t after = 0;
  while (true) {
    Result<std::vector<TaskRecord>> page = store.load_tasks(after, 1000);
    if (!page) return page.status().with_context("rebuilding task queues");
    if (page->empty()) break;
    for (TaskRecord& task : *page) {
      after = task.task_id;
      engine->dispatch(std::move(task));
    }
  }
  engine->timer_thread_ = std::thread([e = engine.get()] { e->timer_loop(); });
  engine->start_retention();
  return engine;
}

Engine::Engine(Store& store, EngineOptions options)
    : store_(store),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : SystemClock::instance()),
      matching_(deadlines_),
      executor_(options_.executor_threads),
      serializer_(executor_),
      claim_check_(store.blobs(), options_.claim_check),
      random_(options_.random_seed != 0 ? options_.random_seed : std::random_device()()),
      query_epoch_((uint64_t{std::random_device()()} << 32 | std::random_device()()) | 1) {}

Engine::~Engine() { shutdown(); }

void Engine::shutdown() {
  {
    std::lock_guard lock(ops_mu_);
    if (closing_) return;
    closing_ = true;
  }
  matching_.shutdown();  // parked polls answer empty
  {
    std::lock_guard lock(timer_mu_);
    stopping_ = true;
  }
  timer_cv_.notify_all();
  if (timer_thread_.joinable()) timer_thread_.join();
  stop_retention();  // a pass in progress ends after its batch
  // Parked history long-polls see the engine closing and answer empty.
  std::map<ExecutionKey, std::map<uint64_t, std::function<void()>>> parked;
  {
    std::lock_guard lock(watch_mu_);
    parked.swap(watchers_);
  }
  for (auto& [key, wakes] : parked) {
    for (auto& [id, wake] : wakes) wake();
  }
  std::map<uint64_t, PendingQuery> queries;
  {
    std::lock_guard lock(query_mu_);
    queries.swap(queries_);
  }
  for (auto& [id, q] : queries) {
    deadlines_.cancel(q.deadline);
    q.reply(Status::unavailable("the server is shutting down"));
  }
  queries.clear();  // their operations end here
  {
    std::unique_lock lock(ops_mu_);
    ops_cv_.wait(lock, [this] { return active_ops_ == 0; });
  }
  // Left: callbacks that only tidy matching (sticky task expiry); they must
  // not outlive the members they touch.
  deadlines_.stop();
}

bool Engine::closing() {
  std::lock_guard lock(ops_mu_);
  return closing_;
}

// --- plumbing ---

void Engine::transition(const ExecutionKey& key, Op op, std::function<void(Transition&)> extra,
                        std::function<void(Result<MutableState*>)> then, Unreadable unreadable) {
  OperationRef in_flight = begin_op();
  if (!in_flight) {
    then(Status::unavailable("the server is shutting down"));
    return;
  }
  serializer_.run(key, [this, key, op = std::move(op), extra = std::move(extra), then, unreadable,
                        in_flight](ExecutionSerializer::Done done) {
    auto answer = [then, done, in_flight](Result<MutableState*> r) {
      then(std::move(r));
      done();
    };
    Result<ExecutionRecord> record = store_.get_execution(key);
    if (!record) {
      if (record.status().code() == StatusCode::kNotFound && extra) {
        // The execution is gone; still drop the task or timer row that led here.
        Transition cleanup;
        extra(cleanup);
        commit(std::move(cleanup), [answer, s = record.status()](Result<CommitResult>) { answer(s); });
        return;
      }
      answer(record.status());
      return;
    }
    Result<MutableState> loaded = MutableState::load(*record, clock_.now(), options_.config);
    std::shared_ptr<MutableState> ms;
    if (loaded) {
      ms = std::make_shared<MutableState>(std::move(loaded).value());
    } else if (loaded.status().code() == StatusCode::kDataLoss && unreadable == Unreadable::kSalvage) {
      log::error("execution state does not parse; salvaged to be terminated",
                 {{"workflow_id", key.workflow_id}, {"run_id", key.run_id}, {"error", loaded.status().to_string()}});
      ms = std::make_shared<MutableState>(MutableState::salvage(*record, clock_.now(), options_.config));
    } else {
      answer(loaded.status());
      return;
    }
    ms->set_run_id_source([this] { return new_run_id(); });
    Status s = op(*ms);
    if (!s.is_ok()) {
      answer(s);
      return;
    }
    if (ms->unchanged()) return answer(ms.get());
    if (ms->found_stale() && extra) {
      // Only the row that led here goes; the execution is not rewritten.
      Transition drop;
      extra(drop);
      if (drop.remove_tasks.empty() && drop.remove_timers.empty()) return answer(ms.get());
      commit(std::move(drop), [ms, answer](Result<CommitResult> r) {
        if (!r) return answer(r.status());
        answer(ms.get());
      });
      return;
    }
    thread_local history::EventBatchCodec codec;
    Result<Transition> t = ms->finish(codec);
    if (!t) {
      answer(t.status());
      return;
    }
    if (extra) extra(*t);
    commit(std::move(*t), [this, ms, answer](Result<CommitResult> r) {
      if (!r) return answer(r.status());
      add_sticky_tasks(*ms);
      if (ms->became_closed()) {
        log::info("workflow closed", {{"workflow_id", ms->key().workflow_id},
                                      {"run_id", ms->key().run_id},
                                      {"status", enum_name(ms->state().status())}});
      }
      answer(ms.get());
    });
  });
}

void Engine::commit(Transition t, std::function<void(Result<CommitResult>)> then) {
  std::vector<TaskRecord> tasks = t.add_tasks;
  std::vector<TimePoint> timers;
  for (const auto& timer : t.add_timers) timers.push_back(timer.fire_at);
  std::vector<ExecutionKey> changed;
  for (const auto& w : t.executions) changed.push_back(w.key);
  // The store's callback counts as an operation of its own, so the engine
  // outlives the writer thread's last touch of it.
  store_.commit_async(
      std::move(t), [this, tasks = std::move(tasks), timers = std::move(timers), changed = std::move(changed), then,
                     in_flight = nested_op()](Result<CommitResult> r) mutable {
        // A lost race (ABORTED) or a failed condition is the caller's to answer;
        // anything else means the store itself is in trouble.
        if (!r && r.status().code() != StatusCode::kAborted && r.status().code() != StatusCode::kFailedPrecondition) {
          log::error("commit failed", {{"error", r.status().to_string()}});
        }
        // Off the store's writer thread at once.
        executor_.post([this, tasks = std::move(tasks), timers = std::move(timers), changed = std::move(changed), then,
                        r = std::move(r)]() mutable {
          if (r) after_commit(tasks, timers, changed, *r);
          then(std::move(r));
        });
      });
}

void Engine::after_commit(const std::vector<TaskRecord>& tasks, const std::vector<TimePoint>& timers,
                          const std::vector<ExecutionKey>& changed, const CommitResult& result) {
  for (size_t i = 0; i < tasks.size() && i < result.task_ids.size(); ++i) {
    TaskRecord task = tasks[i];
    task.task_id = result.task_ids[i];
    dispatch(std::move(task));
  }
  if (!timers.empty()) check_timers();
  for (const auto& key : changed) wake_watchers(key);
}

void Engine::add_sticky_tasks(const MutableState& ms) {
  const auto linger = to_nanos(ms.state().sticky_schedule_to_start()) + std::chrono::seconds(1);
  for (TaskRecord task : ms.sticky_tasks()) {
    task.task_id = memory_task_id();
    const QueueKey queue{task.execution.namespace_id, task.kind, task.queue};
    const int64_t id = task.task_id;
    matching_.add(std::move(task));
    deadlines_.schedule(
        std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::milliseconds>(linger),
        [this, queue, id] { matching_.remove(queue, id); });
  }
}

void Engine::dispatch(TaskRecord task) {
  if (task.kind == TaskKind::kTransfer) {
    OperationRef in_flight = begin_op();
    if (!in_flight) return;  // closing: the row stays for the next start
    executor_.post([this, task = std::move(task), in_flight]() mutable { run_transfer(std::move(task)); });
  } else {
    matching_.add(std::move(task));
  }
}

Engine::OperationRef Engine::begin_op() {
  {
    std::lock_guard lock(ops_mu_);
    if (closing_) return nullptr;
    ++active_ops_;
  }
  return std::make_shared<Operation>(*this);
}

Engine::OperationRef Engine::nested_op() {
  {
    std::lock_guard lock(ops_mu_);
    ++active_ops_;
  }
  return std::make_shared<Operation>(*this);
}

void Engine::end_op() {
  // Notified under the lock: once the destructor sees zero, nothing here
  // touches the engine again.
  std::lock_guard lock(ops_mu_);
  if (--active_ops_ == 0) ops_cv_.notify_all();
}

Result<ExecutionKey> Engine::resolve(const std::string& namespace_id, const v1::WorkflowExecution& execution) {
  if (execution.workflow_id().empty()) return Status::invalid_argument("workflow_execution.workflow_id is required");
  if (!execution.run_id().empty()) return ExecutionKey{namespace_id, execution.workflow_id(), execution.run_id()};
  Result<CurrentRun> current = store_.get_current_run(namespace_id, execution.workflow_id());
  if (!current) return current.status();
  return ExecutionKey{namespace_id, execution.workflow_id(), current->run_id};
}

void Engine::transition_named(const std::string& namespace_id, const v1::WorkflowExecution& execution, Op op,
                              std::function<void(Result<MutableState*>)> then, Unreadable unreadable, int hops) {
  Result<ExecutionKey> key = resolve(namespace_id, execution);
  if (!key) return then(key.status());
  // A request for "the current run" waited in that run's queue behind a
  // continue-as-new: it follows the chain to the run that is current now
  // (Temporal's behaviour), a bounded number of hops.
  constexpr int kMaxHops = 8;
  auto follow = [this, namespace_id, execution, op, then, unreadable, hops,
                 run_id = key->run_id](Result<MutableState*> r) {
    if (!r && r.status().code() == StatusCode::kFailedPrecondition && execution.run_id().empty() && hops < kMaxHops) {
      Result<ExecutionKey> now = resolve(namespace_id, execution);
      if (now && now->run_id != run_id) {
        return transition_named(namespace_id, execution, op, then, unreadable, hops + 1);
      }
    }
    then(std::move(r));
  };
  transition(*key, std::move(op), {}, std::move(follow), unreadable);
}

Result<Engine::LoadedExecution> Engine::load_execution(std::string namespace_id,
                                                       const v1::WorkflowExecution& execution) {
  REPRISE_RETURN_IF_ERROR(check_namespace(namespace_id));
  Result<ExecutionKey> key = resolve(namespace_id, execution);
  if (!key) return key.status();
  Result<ExecutionRecord> record = store_.get_execution(*key);
  if (!record) return record.status();
  LoadedExecution out{*key, std::move(record).value(), {}};
  if (!history::parse_stored(out.record.state, out.state)) {
    return Status::data_loss("state of execution " + key->to_string() + " does not parse");
  }
  return out;
}

std::string Engine::new_run_id() {
  std::lock_guard lock(random_mu_);
  const uint64_t hi = random_(), lo = random_();
  return history::format_uuid_v4(hi, lo);
}

DeadlineScheduler::SteadyTime Engine::poll_deadline() const {
  return std::chrono::steady_clock::now() + options_.poll_timeout;
}

// --- client side ---

void Engine::start_workflow(v1::StartWorkflowRequest request, Reply<v1::StartWorkflowResponse> reply) {
  if (Status s = validate_request(request); !s) return reply(s);
  std::string ns = request.namespace_();
  if (Status s = check_start_request(ns, request, options_.config); !s) return reply(s);
  if (Result<bool> refs = claim_check_.offload(request); !refs) return reply(refs.status());
  start_run(std::move(ns), std::move(request), std::nullopt, std::move(reply));
}

void Engine::signal_with_start(v1::SignalWithStartRequest request, Reply<v1::StartWorkflowResponse> reply) {
  if (Status s = validate_request(request); !s) return reply(s);
  std::string ns = request.start().namespace_();
  if (Status s = check_start_request(ns, request.start(), options_.config); !s) return reply(s);
  if (Result<bool> refs = claim_check_.offload(request); !refs) return reply(refs.status());
  if (request.signal_name().empty()) return reply(Status::invalid_argument("signal_name is required"));
  v1::SignalWorkflowRequest signal;
  signal.set_namespace_(ns);
  signal.mutable_workflow_execution()->set_workflow_id(request.start().workflow_id());
  signal.set_signal_name(request.signal_name());
  *signal.mutable_input() = request.signal_input();
  signal.set_identity(request.start().identity());
  signal.set_request_id(request.start().request_id());
  start_run(std::move(ns), std::move(*request.mutable_start()), std::move(signal), std::move(reply));
}

void Engine::start_run(std::string ns, v1::StartWorkflowRequest request,
                       std::optional<v1::SignalWorkflowRequest> signal, Reply<v1::StartWorkflowResponse> reply) {
  // Starts of one workflow id are serialized on the id itself (empty run).
  const ExecutionKey id_key{ns, request.workflow_id(), ""};
  OperationRef in_flight = begin_op();
  if (!in_flight) return reply(Status::unavailable("the server is shutting down"));
  serializer_.run(id_key, [this, ns, request = std::move(request), signal = std::move(signal), reply,
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
              return ms.signal(signal->signal_name(), signal->input(), signal->identity(), signal->request_id());
            },
            {},
            [answer, run_id = current->run_id](Result<MutableState*> r) {
              if (!r) return answer(r.status());
              v1::StartWorkflowResponse signaled;
              signaled.set_run_id(run_id);
              signaled.set_started(false);
              answer(signaled);
            });
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
    if (Status s = ms.start(request); !s) return answer(s);
    if (signal) {
      if (Status s = ms.signal(signal->signal_name(), signal->input(), signal->identity(), signal->request_id()); !s) {
        return answer(s);
      }
    }
    thread_local history::EventBatchCodec codec;
    Result<Transition> t = ms.finish(codec);
    if (!t) return answer(t.status());
    t->current_runs.push_back(
        {{ns, key.workflow_id, key.run_id, v1::WORKFLOW_EXECUTION_STATUS_RUNNING, request.request_id()}, expected_run});
    commit(std::move(*t), [answer, key, type = request.workflow_type().name()](Result<CommitResult> r) {
      if (!r) return answer(r.status());
      log::info("workflow started", {{"workflow_id", key.workflow_id}, {"run_id", key.run_id}, {"type", type}});
      const std::string& run_id = key.run_id;
      v1::StartWorkflowResponse response;
      response.set_run_id(run_id);
      response.set_started(true);
      answer(response);
    });
  });
}

void Engine::signal_workflow(v1::SignalWorkflowRequest request, Reply<v1::SignalWorkflowResponse> reply) {
  if (Status s = validate_request(request); !s) return reply(s);
  Result<bool> refs = claim_check_.offload(request);
  if (!refs) return reply(refs.status());
  std::string ns = request.namespace_();
  if (Status s = check_namespace(ns); !s) return reply(s);
  transition_named(
      ns, request.workflow_execution(),
      [request, refs = *refs](MutableState& ms) {
        if (refs) ms.expect_claim_checks();
        return ms.signal(request.signal_name(), request.input(), request.identity(), request.request_id());
      },
      [reply](Result<MutableState*> r) {
        if (!r) return reply(r.status());
        reply(v1::SignalWorkflowResponse());
      });
}

void Engine::request_cancel_workflow(v1::RequestCancelWorkflowRequest request,
                                     Reply<v1::RequestCancelWorkflowResponse> reply) {
  if (Status s = validate_request(request); !s) return reply(s);
  std::string ns = request.namespace_();
  if (Status s = check_namespace(ns); !s) return reply(s);
  transition_named(
      ns, request.workflow_execution(),
      [request](MutableState& ms) { return ms.request_cancel(request.reason(), request.identity()); },
      [reply](Result<MutableState*> r) {
        if (!r) return reply(r.status());
        reply(v1::RequestCancelWorkflowResponse());
      });
}

void Engine::terminate_workflow(v1::TerminateWorkflowRequest request, Reply<v1::TerminateWorkflowResponse> reply) {
  if (Status s = validate_request(request); !s) return reply(s);
  Result<bool> refs = claim_check_.offload(request);
  if (!refs) return reply(refs.status());
  std::string ns = request.namespace_();
  if (Status s = check_namespace(ns); !s) return reply(s);
  transition_named(
      ns, request.workflow_execution(),
      [request, refs = *refs](MutableState& ms) {
        if (refs) ms.expect_claim_checks();
        return ms.terminate(request.reason(), request.details(), request.identity());
      },
      [reply](Result<MutableState*> r) {
        if (!r) return reply(r.status());
        reply(v1::TerminateWorkflowResponse());
      },
      Unreadable::kSalvage);
}

void Engine::describe_workflow(v1::DescribeWorkflowRequest request, Reply<v1::DescribeWorkflowResponse> reply) {
  if (Status s = validate_request(request); !s) return reply(s);
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
  reply(out);
}

Status Engine::fill_history(const ExecutionKey& key, int64_t first_event_id, int max_events, v1::History& out,
                            int64_t& next_event_id) {
  thread_local history::EventBatchCodec codec;  // every poll reads history: keep the zstd contexts
  next_event_id = first_event_id;
  while (out.events_size() < max_events) {
    Result<std::vector<HistoryBatch>> batches = store_.read_history(key, next_event_id, 16);
    if (!batches) return batches.status();
    if (batches->empty()) break;
    for (const HistoryBatch& b : *batches) {
      v1::History page;
      REPRISE_RETURN_IF_ERROR(codec.decode(b.data, page));
      for (auto& e : *page.mutable_events()) {
        if (e.event_id() < next_event_id || out.events_size() >= max_events) continue;
        next_event_id = e.event_id() + 1;
        *out.add_events() = std::move(e);
      }
      if (out.events_size() >= max_events) break;
    }
  }
  return Status::ok();
}

void Engine::get_history(v1::GetHistoryRequest request, Reply<v1::GetHistoryResponse> reply,
                         std::shared_ptr<PollTicket> ticket) {
  if (Status s = validate_request(request); !s) return reply(s);
  std::string ns = request.namespace_();
  if (Status s = check_namespace(ns); !s) return reply(s);
  Result<ExecutionKey> resolved = resolve(ns, request.workflow_execution());
  if (!resolved) return reply(resolved.status());
  const ExecutionKey key = *resolved;
  int64_t first = request.first_event_id() > 0 ? request.first_event_id() : 1;
  if (!request.next_page_token().empty()) {
    try {
      first = std::stoll(request.next_page_token());
    } catch (const std::exception&) {
      return reply(Status::invalid_argument("next_page_token is malformed"));
    }
  }
  const int max_events = request.maximum_page_size() > 0 ? request.maximum_page_size() : kHistoryPageDefault;
  const auto wait = std::min<std::chrono::milliseconds>(
      request.wait_timeout().seconds() > 0 || request.wait_timeout().nanos() > 0
          ? std::chrono::duration_cast<std::chrono::milliseconds>(to_nanos(request.wait_timeout()))
          : options_.poll_timeout,
      options_.max_history_wait);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  OperationRef in_flight = begin_op();
  if (!in_flight) return reply(Status::unavailable("the server is shutting down"));
  // Exactly one answer, whoever gives it: the read, the wait's end, shutdown.
  auto answered = std::make_shared<std::atomic<bool>>(false);
  auto wait_deadline = std::make_shared<std::atomic<DeadlineScheduler::Id>>(0);
  auto finish = [this, answered, wait_deadline, reply, in_flight](Result<v1::GetHistoryResponse> r) {
    if (answered->exchange(true)) return;
    // The deadline holds the waiting closure: it goes now, not when due.
    deadlines_.cancel(wait_deadline->load());
    reply(std::move(r));
    in_flight->end();  // a poll ticket may keep this closure long after
  };

  // Reads what is there; when the caller wants to wait and nothing new is
  // there yet, parks until the execution changes or the wait ends.
  auto attempt = std::make_shared<std::function<void()>>();
  auto watch_id = std::make_shared<std::atomic<uint64_t>>(0);
  *attempt = [this, key, first, max_events, request, finish, answered, deadline, watch_id,
              attempt_weak = std::weak_ptr(attempt)] {
    if (answered->load()) return;
    if (closing()) return finish(v1::GetHistoryResponse());
    auto again = attempt_weak.lock();
    if (!again) return;
    if (request.wait_new_event()) {
      // Watch before reading: a change committed after the read would
      // otherwise wake nobody until the deadline.
      const uint64_t id = watch(key, [this, again] { executor_.post([again] { (*again)(); }); });
      watch_id->store(id);
    }
    auto done = [&](Result<v1::GetHistoryResponse> r) {
      unwatch(key, watch_id->load());
      finish(std::move(r));
    };
    Result<ExecutionRecord> record = store_.get_execution(key);
    if (!record) return done(record.status());
    const bool closed = record->status != v1::WORKFLOW_EXECUTION_STATUS_RUNNING;
    v1::GetHistoryResponse out;
    int64_t next = first;
    if (request.close_event_only()) {
      if (closed) next = record->next_event_id - 1;
      if (closed || !request.wait_new_event()) {
        if (Status s = fill_history(key, next, 1, *out.mutable_history(), next); !s) return done(s);
        if (!closed) out.clear_history();
        return done(out);
      }
    } else {
      if (Status s = fill_history(key, first, max_events, *out.mutable_history(), next); !s) return done(s);
      const bool more = next < record->next_event_id;
      if (out.history().events_size() > 0 || closed || !request.wait_new_event()) {
        if (more) out.set_next_page_token(encode_page(next));
        return done(out);
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return done(v1::GetHistoryResponse());
    // Parked: the watch wakes this again. If the wait ended meanwhile, the
    // watcher goes now rather than at the next change.
    if (answered->load()) unwatch(key, watch_id->load());
  };
  // The wait ends at its deadline or when the caller goes away; either way
  // the watcher goes too.
  auto give_up = [this, key, finish, watch_id] {
    finish(v1::GetHistoryResponse());
    unwatch(key, watch_id->load());
  };
  // Holding `attempt` keeps the waiting closure alive until the wait ends.
  wait_deadline->store(deadlines_.schedule(deadline, [give_up, attempt] { give_up(); }));
  if (ticket) ticket->on_cancel(give_up);
  (*attempt)();
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
  q.page_size = request.page_size() > 0 ? request.page_size() : 100;
  q.page_token = request.next_page_token();
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

uint64_t Engine::watch(const ExecutionKey& key, std::function<void()> wake) {
  std::lock_guard lock(watch_mu_);
  const uint64_t id = next_watch_id_++;
  watchers_[key].emplace(id, std::move(wake));
  return id;
}

size_t Engine::parked_history_waits() {
  std::lock_guard lock(watch_mu_);
  size_t n = 0;
  for (const auto& [key, waits] : watchers_) n += waits.size();
  return n;
}

void Engine::unwatch(const ExecutionKey& key, uint64_t id) {
  std::lock_guard lock(watch_mu_);
  auto it = watchers_.find(key);
  if (it == watchers_.end()) return;
  it->second.erase(id);
  if (it->second.empty()) watchers_.erase(it);
}

void Engine::wake_watchers(const ExecutionKey& key) {
  std::map<uint64_t, std::function<void()>> woken;
  {
    std::lock_guard lock(watch_mu_);
    auto it = watchers_.find(key);
    if (it == watchers_.end()) return;
    woken = std::move(it->second);
    watchers_.erase(it);
  }
  for (auto& [id, w] : woken) w();
}

// --- worker side ---

void Engine::poll_workflow_task(v1::PollWorkflowTaskRequest request, Reply<v1::PollWorkflowTaskResponse> reply,
                                std::shared_ptr<PollTicket> ticket) {
  if (Status s = validate_request(request); !s) return reply(s);
  std::string ns = request.namespace_();
  if (Status s = check_namespace(ns); !s) return reply(s);
  if (request.task_queue().name().empty()) return reply(Status::invalid_argument("task_queue.name is required"));
  poll_task<v1::PollWorkflowTaskResponse>(
      {{ns, TaskKind::kWorkflowTask, request.task_queue().name()},
       request.identity(),
       poll_deadline(),
       std::move(ticket)},
      std::move(reply),
      [](MutableState& ms, const internal::TaskPayload& p, const std::string& who, v1::PollWorkflowTaskResponse& out) {
        return ms.start_workflow_task(p, who, out);
      },
      [this](const TaskRecord& task, const internal::TaskPayload& payload, v1::PollWorkflowTaskResponse& out) {
        // The sticky worker has the workflow cached up to its last task.
        const int64_t first = payload.sticky() ? out.previous_started_event_id() + 1 : 1;
        v1::History transient;  // a retry's own events, not written yet: they go last
        transient.Swap(out.mutable_history());
        int64_t next = 0;
        REPRISE_RETURN_IF_ERROR(fill_history(task.execution, first, INT_MAX, *out.mutable_history(), next));
        for (auto& e : *transient.mutable_events()) *out.mutable_history()->add_events() = std::move(e);
        return Status::ok();
      });
}

void Engine::poll_activity_task(v1::PollActivityTaskRequest request, Reply<v1::PollActivityTaskResponse> reply,
                                std::shared_ptr<PollTicket> ticket) {
  if (Status s = validate_request(request); !s) return reply(s);
  std::string ns = request.namespace_();
  if (Status s = check_namespace(ns); !s) return reply(s);
  if (request.task_queue().name().empty()) return reply(Status::invalid_argument("task_queue.name is required"));
  poll_task<v1::PollActivityTaskResponse>(
      {{ns, TaskKind::kActivityTask, request.task_queue().name()},
       request.identity(),
       poll_deadline(),
       std::move(ticket)},
      std::move(reply),
      [](MutableState& ms, const internal::TaskPayload& p, const std::string& who, v1::PollActivityTaskResponse& out) {
        return ms.start_activity(p, who, out);
      },
      [this](const TaskRecord& task, const internal::TaskPayload& payload, v1::PollActivityTaskResponse& out) {
        // The input lives in the scheduled event, not in the state: read it.
        v1::History scheduled;
        int64_t next = 0;
        REPRISE_RETURN_IF_ERROR(fill_history(task.execution, payload.scheduled_event_id(), 1, scheduled, next));
        if (scheduled.events_size() == 1) *out.mutable_input() = scheduled.events(0).activity_task_scheduled().input();
        return Status::ok();
      });
}

template <typename Response>
void Engine::poll_task(PollSpec spec, Reply<Response> reply, StartTask<Response> start, FillTask<Response> fill) {
  auto again = [=, this] { poll_task(spec, reply, start, fill); };
  const Matching::PollId id = matching_.poll(spec.queue, spec.deadline, [=, this](std::optional<TaskRecord> task) {
    if (!task) return reply(Response());
    if (spec.ticket && spec.ticket->canceled()) {
      // The poller went away: the task goes to the next one, untouched.
      matching_.add(std::move(*task));
      return reply(Response());
    }
    internal::TaskPayload payload;
    payload.ParseFromString(task->payload);
    if constexpr (std::is_same_v<Response, v1::PollWorkflowTaskResponse>) {
      if (payload.query_id() != 0) return start_query_task(*task, payload, reply, again);
    }
    auto response = std::make_shared<Response>();
    auto applied = std::make_shared<Applied>(Applied::kStale);
    transition(
        task->execution,
        [=](MutableState& ms) {
          Result<Applied> a = start(ms, payload, spec.identity, *response);
          if (!a) return a.status();
          *applied = *a;
          return Status::ok();
        },
        [id = task->task_id](Transition& t) {
          if (id > 0) t.remove_tasks.push_back(id);  // memory-only tasks have no row
        },
        [=, this](Result<MutableState*> r) {
          if (!r && r.status().code() != StatusCode::kNotFound) {
            matching_.add(*task);  // its row is still there: keep it available
            return reply(r.status());
          }
          // A stale row (or a vanished execution) was dropped: wait for the next.
          if (!r || *applied == Applied::kStale) return again();
          if (Status s = fill(*task, payload, *response); !s) return reply(s);
          reply(std::move(*response));
        });
  });
  if (spec.ticket) spec.ticket->on_cancel([this, id] { matching_.cancel(id); });
}

template <typename Response>
void Engine::on_task_token(const std::string& token_bytes, bool claim_checks,
                           std::function<Status(MutableState&, const internal::TaskToken&)> op,
                           std::function<Response()> respond, Reply<Response> reply) {
  Result<internal::TaskToken> token = MutableState::decode_token(token_bytes);
  if (!token) return reply(token.status());
  const ExecutionKey key{token->namespace_(), token->workflow_id(), token->run_id()};
  transition(
      key,
      [token = *token, claim_checks, op](MutableState& ms) {
        if (claim_checks) ms.expect_claim_checks();
        return op(ms, token);
      },
      {},
      [reply, respond](Result<MutableState*> r) {
        if (!r) return reply(r.status());
        if (!(*r)->rejection().is_ok()) return reply((*r)->rejection());
        reply(respond());
      });
}

void Engine::complete_workflow_task(v1::CompleteWorkflowTaskRequest request,
                                    Reply<v1::CompleteWorkflowTaskResponse> reply) {
  if (Status s = validate_request(request); !s) return reply(s);
  if (auto query = query_token(request.task_token())) {
    if (Status s = answer_query(*query, &request, nullptr); !s) return reply(s);
    return reply(v1::CompleteWorkflowTaskResponse());
  }
  Result<bool> refs = claim_check_.offload(request);
  if (!refs) return reply(refs.status());
  on_task_token<v1::CompleteWorkflowTaskResponse>(
      request.task_token(), *refs,
      [request](MutableState& ms, const internal::TaskToken& t) { return ms.complete_workflow_task(t, request); },
      [] { return v1::CompleteWorkflowTaskResponse(); }, std::move(reply));
}

void Engine::fail_workflow_task(v1::FailWorkflowTaskRequest request, Reply<v1::FailWorkflowTaskResponse> reply) {
  if (Status s = validate_request(request); !s) return reply(s);
  if (auto query = query_token(request.task_token())) {
    if (Status s = answer_query(*query, nullptr, &request); !s) return reply(s);
    return reply(v1::FailWorkflowTaskResponse());
  }
  Result<bool> refs = claim_check_.offload(request);
  if (!refs) return reply(refs.status());
  on_task_token<v1::FailWorkflowTaskResponse>(
      request.task_token(), *refs,
      [request](MutableState& ms, const internal::TaskToken& t) {
        REPRISE_RETURN_IF_ERROR(ms.fail_workflow_task(t, request));
        // Blocked workflows are what an operator looks for: say why, every time.
        log::warn("workflow task failed", {{"workflow_id", t.workflow_id()},
                                           {"run_id", t.run_id()},
                                           {"attempt", std::to_string(t.attempt())},
                                           {"cause", enum_name(request.cause())},
                                           {"message", request.failure().message()}});
        return Status::ok();
      },
      [] { return v1::FailWorkflowTaskResponse(); }, std::move(reply));
}

void Engine::heartbeat_activity(v1::HeartbeatActivityRequest request, Reply<v1::HeartbeatActivityResponse> reply) {
  if (Status s = validate_request(request); !s) return reply(s);
  Result<bool> refs = claim_check_.offload(request);
  if (!refs) return reply(refs.status());
  auto cancel_requested = std::make_shared<bool>(false);
  on_task_token<v1::HeartbeatActivityResponse>(
      request.task_token(), *refs,
      [request, cancel_requested](MutableState& ms, const internal::TaskToken& t) {
        Result<bool> r = ms.heartbeat_activity(t, request.details());
        if (!r) return r.status();
        *cancel_requested = *r;
        return Status::ok();
      },
      [cancel_requested] {
        v1::HeartbeatActivityResponse out;
        out.set_cancel_requested(*cancel_requested);
        return out;
      },
      std::move(reply));
}

void Engine::complete_activity(v1::CompleteActivityRequest request, Reply<v1::CompleteActivityResponse> reply) {
  if (Status s = validate_request(request); !s) return reply(s);
  Result<bool> refs = claim_check_.offload(request);
  if (!refs) return reply(refs.status());
  on_task_token<v1::CompleteActivityResponse>(
      request.task_token(), *refs,
      [request](MutableState& ms, const internal::TaskToken& t) {
        return ms.complete_activity(t, request.result(), request.identity());
      },
      [] { return v1::CompleteActivityResponse(); }, std::move(reply));
}

void Engine::fail_activity(v1::FailActivityRequest request, Reply<v1::FailActivityResponse> reply) {
  if (Status s = validate_request(request); !s) return reply(s);
  Result<bool> refs = claim_check_.offload(request);
  if (!refs) return reply(refs.status());
  on_task_token<v1::FailActivityResponse>(
      request.task_token(), *refs,
      [request](MutableState& ms, const internal::TaskToken& t) {
        return ms.fail_activity(t, request.failure(), request.last_heartbeat_details(), request.identity());
      },
      [] { return v1::FailActivityResponse(); }, std::move(reply));
}

void Engine::report_activity_canceled(v1::ReportActivityCanceledRequest request,
                                      Reply<v1::ReportActivityCanceledResponse> reply) {
  if (Status s = validate_request(request); !s) return reply(s);
  Result<bool> refs = claim_check_.offload(request);
  if (!refs) return reply(refs.status());
  on_task_token<v1::ReportActivityCanceledResponse>(
      request.task_token(), *refs,
      [request](MutableState& ms, const internal::TaskToken& t) {
        return ms.report_activity_canceled(t, request.details(), request.identity());
      },
      [] { return v1::ReportActivityCanceledResponse(); }, std::move(reply));
}

// --- timers ---

void Engine::check_timers() {
  {
    std::lock_guard lock(timer_mu_);
    timer_check_requested_ = true;
  }
  timer_cv_.notify_all();
}

void Engine::collect_blob_garbage_if_due() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_blob_gc_) return;
  next_blob_gc_ = now + options_.blob_gc_interval;
  Result<GcStats> gc = store_.blobs().collect_garbage(options_.blob_gc_grace);
  if (!gc) {
    log::error("blob garbage collection failed", {{"error", gc.status().to_string()}});
  } else if (gc->blobs_deleted > 0 || gc->uploads_abandoned > 0) {
    log::info("blob garbage collected", {{"blobs", std::to_string(gc->blobs_deleted)},
                                         {"bytes", std::to_string(gc->bytes_freed)},
                                         {"abandoned_uploads", std::to_string(gc->uploads_abandoned)}});
  }
}

void Engine::timer_loop() {
  next_blob_gc_ = std::chrono::steady_clock::now() + options_.blob_gc_interval;
  std::unique_lock lock(timer_mu_);
  while (!stopping_) {
    timer_check_requested_ = false;
    lock.unlock();
    collect_blob_garbage_if_due();
    Result<std::vector<TimerRecord>> due = store_.due_timers(clock_.now(), 256);
    Result<std::optional<TimePoint>> next = store_.next_timer_time();
    lock.lock();
    std::vector<TimerRecord> launch;
    if (due) {
      for (TimerRecord& t : *due) {
        if (timers_in_flight_.insert(t.timer_id).second) launch.push_back(std::move(t));
      }
    }
    if (!launch.empty()) {
      lock.unlock();
      for (TimerRecord& t : launch) fire(std::move(t));
      lock.lock();
      continue;
    }
    // Sleep until the next timer is due (re-checking at least every second,
    // since the clock may be moved by hand) or until asked to look again.
    auto wait = std::chrono::milliseconds(1000);
    if (next && next->has_value() && (!due || due->empty())) {
      const auto until = std::chrono::duration_cast<std::chrono::milliseconds>(**next - clock_.now());
      wait = std::clamp(until, std::chrono::milliseconds(0), wait);
    }
    timer_cv_.wait_for(lock, wait, [this] { return stopping_ || timer_check_requested_; });
  }
}

void Engine::fire(TimerRecord timer) {
  internal::TimerTask task;
  task.ParseFromString(timer.payload);
  const int64_t id = timer.timer_id;
  const ExecutionKey key = timer.execution;  // `timer` moves into the callback
  transition(
      key, [task](MutableState& ms) { return ms.fire_timer(task).status(); },
      [id](Transition& t) { t.remove_timers.push_back(id); },
      [this, timer = std::move(timer), task](Result<MutableState*> r) mutable {
        const StatusCode code = r.is_ok() ? StatusCode::kOk : r.status().code();
        // A lost race (ABORTED) or a closing server is retried on the next
        // pass; anything else will fail again the same way.
        const bool permanent = code != StatusCode::kOk && code != StatusCode::kNotFound &&
                               code != StatusCode::kAborted && code != StatusCode::kUnavailable;
        if (permanent) return postpone_timer(std::move(timer), std::move(task), r.status());
        finish_timer(timer.timer_id, code == StatusCode::kOk || code == StatusCode::kNotFound);
      });
}

void Engine::postpone_timer(TimerRecord timer, internal::TimerTask task, const Status& error) {
  // The due-timer window is the oldest rows first: a row that fails on every
  // try must move back, or enough of them stop every timer on the server.
  task.set_fire_failures(task.fire_failures() + 1);
  const std::chrono::nanoseconds delay = std::min<std::chrono::nanoseconds>(
      std::chrono::seconds(int64_t{1} << std::min(task.fire_failures(), 20)), kMaxTimerPostpone);
  log::error("timer failed; postponed",
             {{"workflow_id", timer.execution.workflow_id},
              {"run_id", timer.execution.run_id},
              {"kind", std::to_string(task.kind())},
              {"failures", std::to_string(task.fire_failures())},
              {"retry_in_s", std::to_string(std::chrono::duration_cast<std::chrono::seconds>(delay).count())},
              {"error", error.to_string()}});
  const int64_t id = timer.timer_id;
  Transition t;
  t.remove_timers.push_back(id);
  timer.timer_id = 0;  // a new row
  timer.fire_at = clock_.now() + delay;
  timer.payload = task.SerializeAsString();
  t.add_timers.push_back(std::move(timer));
  commit(std::move(t), [this, id](Result<CommitResult> r) { finish_timer(id, r.is_ok()); });
}

void Engine::finish_timer(int64_t timer_id, bool look_again) {
  {
    std::lock_guard lock(timer_mu_);
    timers_in_flight_.erase(timer_id);
    if (look_again) timer_check_requested_ = true;
  }
  timer_cv_.notify_all();
}

}  // namespace reprise::engine
