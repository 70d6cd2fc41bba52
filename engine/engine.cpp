// The engine's lifecycle (start, shutdown) and the plumbing every RPC goes
// through: one serialized transition per operation, the group commit, what
// happens after a commit, operations in flight and resolving a request's
// execution. The RPCs themselves live by family: client_requests.cpp,
// history_reads.cpp, worker_tasks.cpp, queries.cpp; the timer loop in
// timer_loop.cpp; transfer tasks in transfer.cpp and external_delivery.cpp;
// retention in retention.cpp.
#include "engine/engine.hpp"

#include <algorithm>

#include "engine/log.hpp"
#include "history/enum_name.hpp"
#include "history/stored_proto.hpp"
#include "reprise/detail/proto_time.hpp"
#include "reprise/detail/uuid.hpp"

namespace reprise::engine {

Result<std::string> Engine::task_namespace(const std::string& task_token) const {
  Result<internal::TaskToken> token = options_.config.task_tokens->decode(task_token);
  if (!token) return token.status();
  return token->namespace_();
}

Result<std::unique_ptr<Engine>> Engine::start(Store& store, EngineOptions options) {
  REPRISE_RETURN_IF_ERROR(options.config.history_limits.validate());
  if (options.executor_threads < 1) return Status::invalid_argument("executor_threads must be at least 1");
  if (options.read_threads < 1) return Status::invalid_argument("read_threads must be at least 1");
  if (options.upload_threads < 1) return Status::invalid_argument("upload_threads must be at least 1");
  if (options.max_pending_requests < 1) return Status::invalid_argument("max_pending_requests must be at least 1");
  if (options.max_pending_queries < 1) return Status::invalid_argument("max_pending_queries must be at least 1");
  if (options.max_query_wait.count() < 1) return Status::invalid_argument("max_query_wait must be at least 1 ms");
  if (options.max_waiting_per_execution < 1) {
    return Status::invalid_argument("max_waiting_per_execution must be at least 1");
  }
  // Tokens signed with the database's keys stay good across a restart.
  if (std::vector<TaskTokenKey> keys = store.task_token_keys(); !keys.empty()) {
    options.config.task_tokens = std::make_shared<const TaskTokenCodec>(std::move(keys));
  }
  Result<std::unique_ptr<NamespaceRegistry>> namespaces = NamespaceRegistry::load(store);
  if (!namespaces) return namespaces.status();
  std::unique_ptr<Engine> engine(new Engine(store, std::move(options)));
  engine->namespaces_ = std::move(namespaces).value();
  // Rebuild the task queues from the durable task table: every task, or
  // in a cluster those of the shards this node holds, now and as they come.
  engine->shards_ = store.ownership();
  if (engine->shards_ == nullptr) {
    REPRISE_RETURN_IF_ERROR(engine->gain_shards({}));
  } else {
    // Memory-only task ids of two nodes must not meet in a queue's owner.
    engine->next_memory_task_id_ = 1 + static_cast<int64_t>(engine->query_epoch_ >> 24);
    engine->shards_->listen({[e = engine.get()](const ShardSet& gained) { (void)e->gain_shards(gained); },
                             [e = engine.get()](const ShardSet& lost) { e->lose_shards(lost); },
                             [e = engine.get()](const MembersChange& change) {
                               OperationRef in_flight = e->begin_op();
                               if (!in_flight) return;
                               e->executor_.post([e, in_flight, change] { e->queue_owners_changed(change); });
                             }});
  }
  if (engine->options_.runtime != nullptr) {
    engine->check_timers();  // the stepped timer loop's first pass; the driver runs the rest
    return engine;
  }
  engine->timer_thread_ = std::thread([e = engine.get()] { e->timer_loop(); });
  engine->start_retention();
  engine->start_blob_gc();
  return engine;
}

Engine::Engine(Store& store, EngineOptions options)
    : store_(store),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : SystemClock::instance()),
      own_deadlines_(options_.runtime ? nullptr : std::make_unique<DeadlineScheduler>()),
      own_executor_(options_.runtime ? nullptr : std::make_unique<Executor>("executor", options_.executor_threads)),
      own_read_pool_(options_.runtime ? nullptr : std::make_unique<Executor>("reads", options_.read_threads)),
      own_upload_pool_(options_.runtime ? nullptr : std::make_unique<Executor>("uploads", options_.upload_threads)),
      deadlines_(options_.runtime ? options_.runtime->deadlines : *own_deadlines_),
      executor_(options_.runtime ? options_.runtime->executor : *own_executor_),
      read_pool_(options_.runtime ? options_.runtime->read_pool : *own_read_pool_),
      upload_pool_(options_.runtime ? options_.runtime->upload_pool : *own_upload_pool_),
      matching_(deadlines_),
      serializer_(executor_),
      execution_cache_(options_.execution_cache_entries, options_.execution_cache_bytes),
      admission_(options_.max_pending_requests),
      query_admission_(options_.max_pending_queries),
      claim_check_(store.blobs(), options_.claim_check),
      random_(options_.random_seed != 0 ? options_.random_seed : std::random_device()()),
      query_epoch_(
          (options_.random_seed != 0 ? random_() : uint64_t{std::random_device()()} << 32 | std::random_device()()) |
          1) {
  next_start_id_ = query_epoch_;
}

Engine::~Engine() { shutdown(); }

void Engine::shutdown() {
  {
    std::lock_guard lock(ops_mu_);
    if (closing_) return;
    closing_ = true;
  }
  // Commits waiting for room on a full disk fail instead of holding the
  // operations below (and so this shutdown) until the disk has room.
  store_.stop_waiting_for_space();
  if (shards_ != nullptr) shards_->listen({});  // no shard change reaches a closing engine
  matching_.shutdown();                         // parked polls answer empty
  {
    std::lock_guard lock(timer_mu_);
    stopping_ = true;
  }
  timer_cv_.notify_all();
  if (timer_thread_.joinable()) timer_thread_.join();
  stop_retention();  // a pass in progress ends after its batch
  stop_blob_gc();
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

Status Engine::execution_busy(const ExecutionKey& key) const {
  return Status::busy("workflow '" + key.workflow_id + "' has " + std::to_string(options_.max_waiting_per_execution) +
                      " requests waiting already, its limit (--max-waiting-per-execution); retry later");
}

Result<MutableState> Engine::load_state(const ExecutionRecord& record, Unreadable unreadable,
                                        std::optional<HeldStarts::Entry>& held) {
  const ExecutionKey& key = record.key;
  held = held_starts_.find(key);
  if (held && held->change.version != record.version) {
    // Cannot happen while every write of the run goes through its
    // serialized transitions, which commit what is held; if it did, the
    // hand-outs are forgotten and their tasks offered again.
    log::error("held task starts no longer fit the stored run; dropped",
               {{"workflow_id", key.workflow_id},
                {"run_id", key.run_id},
                {"held_version", std::to_string(held->change.version)},
                {"stored_version", std::to_string(record.version)}});
    held_starts_.erase(key);
    for (TaskRecord& task : held->taken) offer(std::move(task));
    held.reset();
  }
  if (held) return MutableState::resume(record, held->change, clock_.now(), options_.config);
  Result<MutableState> loaded = MutableState::load(record, clock_.now(), options_.config);
  if (!loaded && loaded.status().code() == StatusCode::kDataLoss && unreadable == Unreadable::kSalvage) {
    log::error("execution state does not parse; salvaged to be terminated",
               {{"workflow_id", key.workflow_id}, {"run_id", key.run_id}, {"error", loaded.status().to_string()}});
    return MutableState::salvage(record, clock_.now(), options_.config);
  }
  return loaded;
}

void Engine::run_transition(const ExecutionKey& key, StatusOp op, RowRemoval extra, StatusThen then,
                            Unreadable unreadable, Origin origin, Hold hold, std::optional<TaskRecord> taken) {
  OperationRef in_flight = begin_op();
  if (!in_flight) {
    then(Status::unavailable("the server is shutting down"));
    return;
  }
  // Runs once with the execution's record from the cache (when it holds
  // it), and once more from the store if the commit finds the cached
  // record was not the stored one (another writer: execution_cache.hpp).
  auto body = std::make_shared<std::function<void(ExecutionSerializer::Done, bool)>>();
  *body = [this, key, op = std::move(op), extra = std::move(extra), then, unreadable, in_flight, hold,
           taken = std::move(taken),
           self = std::weak_ptr(body)](ExecutionSerializer::Done done, bool use_cache) mutable {
    auto answer = [then, done, in_flight](Status s) {
      then(std::move(s));
      done();
    };
    // In a cluster, a shard this node does not serve now (moving, or its
    // owner not yet known here): the stored state lacks what its node holds
    // in memory (a started task not yet committed), so an op checked
    // against it could be refused wrongly; the caller tries again.
    if (!serves(key)) return answer(not_served(key));
    std::optional<ExecutionRecord> cached;
    if (use_cache) cached = execution_cache_.find(key);
    Result<ExecutionRecord> record = cached ? Result<ExecutionRecord>(std::move(*cached)) : store_.get_execution(key);
    if (!record) {
      if (record.status().code() == StatusCode::kNotFound) held_starts_.erase(key);  // its rows went with it
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
    std::optional<HeldStarts::Entry> held;
    Result<MutableState> loaded = load_state(*record, unreadable, held);
    if (!loaded) return answer(loaded.status());
    auto ms = std::make_shared<MutableState>(std::move(loaded).value());
    ms->set_start_id_source([this] { return next_start_id_.fetch_add(1); });
    ms->set_run_id_source([this] { return new_run_id(); });
    ms->set_started_event_source([this, key]() -> Result<v1::WorkflowExecutionStartedEventAttributes> {
      v1::History first;
      int64_t next_event_id = 0;
      REPRISE_RETURN_IF_ERROR(fill_history(key, 1, 1, first, next_event_id, 1));
      if (first.events_size() == 0 || !first.events(0).has_workflow_execution_started()) {
        return Status::data_loss("history of " + key.to_string() + " does not begin with WorkflowExecutionStarted");
      }
      return first.events(0).workflow_execution_started();
    });
    Status s = op(*ms);
    if (!s.is_ok()) {
      answer(s);
      return;
    }
    const bool from_cache = use_cache && cached.has_value();
    // A row is dropped as stale only against the stored state, never
    // against the cache alone: no version check guards that drop.
    if (ms->found_stale() && from_cache) {
      if (auto again = self.lock()) return (*again)(done, false);
    }
    if (ms->unchanged()) return answer(Status::ok());
    // A row found stale against a held start is dropped only with that
    // start committed: dropped alone, a crash would lose the start and
    // leave the task without the row (a sticky task's fallback timer, a
    // schedule-to-start timeout) that was to take care of it.
    if (ms->found_stale() && extra && !held) {
      // Only the row that led here goes; the execution is not rewritten.
      Transition drop;
      extra(drop);
      if (drop.remove_tasks.empty() && drop.remove_timers.empty()) return answer(Status::ok());
      commit(std::move(drop), [answer](Result<CommitResult> r) {
        // ABORTED: the row is gone already (a closed run's rows go with its
        // close), which is all this wanted.
        if (!r && r.status().code() != StatusCode::kAborted) return answer(r.status());
        answer(Status::ok());
      });
      return;
    }
    if (options_.max_held_start.count() > 0 &&
        ((hold == Hold::kStarts && ms->only_started_tasks()) || ms->hold_requested())) {
      hold_started(std::move(*ms), std::move(held), extra, std::move(taken));
      return answer(Status::ok());
    }
    thread_local history::EventBatchCodec codec;
    Result<Transition> t = ms->finish(codec);
    if (!t) {
      answer(t.status());
      return;
    }
    if (extra) extra(*t);
    if (held) {
      for (const TaskRecord& task : held->taken) {
        if (task.task_id > 0) t->remove_tasks.push_back(task.task_id);
      }
    }
    const bool commits_held = held.has_value();
    commit(std::move(*t),
           [this, ms, answer, key, commits_held, from_cache, done, again = self.lock()](Result<CommitResult> r) {
             if (!r && r.status().code() == StatusCode::kAborted && from_cache && again) {
               // Refused with nothing written, on a state read from the cache
               // (which the failure dropped): the store may hold another
               // version, so the op runs again on the stored state.
               log::warn("a commit made on cached execution state was refused; running it again on the stored state",
                         {{"workflow_id", key.workflow_id}, {"run_id", key.run_id}, {"error", r.status().to_string()}});
               return (*again)(done, false);
             }
             if (!r) return answer(r.status());  // what is held stays held
             if (commits_held) held_starts_.erase(key);
             add_sticky_tasks(*ms);
             if (ms->became_closed()) {
               log::info("workflow closed", {{"workflow_id", ms->key().workflow_id},
                                             {"run_id", ms->key().run_id},
                                             {"status", enum_name(ms->state().status())}});
             }
             answer(Status::ok());
           });
  };
  auto step = [body](ExecutionSerializer::Done done) { (*body)(std::move(done), true); };
  const size_t max_waiting =
      origin == Origin::kRequest ? options_.max_waiting_per_execution : ExecutionSerializer::kUnbounded;
  if (!serializer_.run(key, std::move(step), max_waiting)) then(execution_busy(key));
}

Result<ExecutionRecord> Engine::read_execution(const ExecutionKey& key) {
  // The cache only while this node serves the run's shard: its lease can
  // run out by its own clock before its lease thread drops the shard's
  // entries (the thread stuck on the database), and the node that takes
  // the shard then writes the run. Reads that are no transition (describe,
  // a result wait, a query) reach here without the transition's check.
  if (serves(key)) {
    if (std::optional<ExecutionRecord> cached = execution_cache_.find(key)) return std::move(*cached);
  }
  return store_.get_execution(key);
}

Result<std::vector<HistoryBatch>> Engine::read_history(const ExecutionKey& key, int64_t from_event_id, int max_batches,
                                                       int64_t known_last) {
  if (serves(key)) {
    if (auto cached = execution_cache_.history(key, from_event_id, max_batches, known_last)) return std::move(*cached);
  }
  return store_.read_history(key, from_event_id, max_batches);
}

void Engine::hold_started(MutableState&& ms, std::optional<HeldStarts::Entry> held, RowRemoval& extra,
                          std::optional<TaskRecord> taken) {
  const ExecutionKey key = ms.key();
  HeldStarts::Entry entry;
  if (held) entry = std::move(*held);
  entry.flushing = false;
  // The rows removed on commit: the task this op started (extra() says
  // whether it has one; a memory-only sticky task has none).
  Transition rows;
  if (extra) extra(rows);
  if (taken && !rows.remove_tasks.empty()) entry.taken.push_back(std::move(*taken));
  entry.change = std::move(ms).hold();
  TimePoint due = clock_.now() + options_.max_held_start;
  if (held) due = std::min(due, held->due);
  for (const TimerRecord& timer : entry.change.timers) due = std::min(due, timer.fire_at);
  entry.due = due;
  held_starts_.put(key, std::move(entry));
  // The timer loop looks at least every second; a start due sooner may need
  // to wake it.
  if (due - clock_.now() < std::chrono::seconds(1)) check_timers_due(due);
}

void Engine::flush_held(const ExecutionKey& key) {
  transition(
      key,
      [](MutableState& ms) -> Result<Done> {
        // Committing what resume() brought back is the whole change.
        if (!ms.resumed_held()) ms.change_nothing();
        return Done{};
      },
      {},
      [this, key](Result<Done> r) {
        if (!r && r.status().code() != StatusCode::kUnavailable) {
          log::warn("held task starts not committed; retried",
                    {{"workflow_id", key.workflow_id}, {"run_id", key.run_id}, {"error", r.status().to_string()}});
        }
        held_starts_.flush_ended(key);
      });
}

void Engine::commit(Transition t, std::function<void(Result<CommitResult>)> then) {
  std::vector<TaskRecord> tasks = t.add_tasks;
  std::vector<TimePoint> timers;
  for (const auto& timer : t.add_timers) timers.push_back(timer.fire_at);
  std::vector<ExecutionKey> changed;
  for (const auto& w : t.executions) changed.push_back(w.key);
  EngineMetrics::RunChanges runs = metrics_.run_changes(t);
  // What the cache keeps of the writes once they are committed (a batch
  // larger than the history it keeps per run only says where it ends).
  std::vector<ExecutionWrite> writes;
  writes.reserve(t.executions.size());
  for (const ExecutionWrite& w : t.executions) {
    ExecutionWrite& kept = writes.emplace_back(ExecutionWrite{w.key, w.expected_version, w.status, w.state, {}});
    if (w.events) {
      kept.events = HistoryBatch{w.events->first_event_id, w.events->last_event_id, {}};
      if (w.events->data.size() <= ExecutionCache::kRecentHistoryBytes) kept.events->data = w.events->data;
    }
  }
  for (const ExecutionKey& key : t.delete_executions) execution_cache_.erase(key);
  std::vector<ExecutionKey> deleted = t.delete_executions;
  const uint64_t cache_generation = execution_cache_.generation();
  // The store's callback counts as an operation of its own, so the engine
  // outlives the writer thread's last touch of it.
  store_.commit_async(
      std::move(t), [this, tasks = std::move(tasks), timers = std::move(timers), changed = std::move(changed), then,
                     runs = std::move(runs), writes = std::move(writes), deleted = std::move(deleted), cache_generation,
                     in_flight = nested_op()](Result<CommitResult> r) mutable {
        // On the writer's thread, in commit order: the cache takes each
        // execution's versions in the order the store gave them, before
        // the run's next transition can look.
        for (size_t i = 0; i < writes.size(); ++i) {
          if (r && i < r->versions.size()) {
            execution_cache_.committed(writes[i], r->versions[i], cache_generation);
          } else {
            execution_cache_.erase(writes[i].key);  // refused or in doubt: the store may hold anything
          }
        }
        for (const ExecutionKey& key : deleted) execution_cache_.erase(key);
        // A later batch's tasks have higher ids than every earlier batch's.
        const int64_t committed_before = highest_committed_task_id_;
        if (r) {
          metrics_.committed(runs);
          for (int64_t id : r->task_ids) highest_committed_task_id_ = std::max(highest_committed_task_id_.load(), id);
        }
        // A lost race (ABORTED) or a failed condition is the caller's to answer;
        // anything else means the store itself is in trouble.
        if (!r && r.status().code() != StatusCode::kAborted && r.status().code() != StatusCode::kFailedPrecondition) {
          log::error("commit failed", {{"error", r.status().to_string()}});
        }
        // Off the store's writer thread at once.
        executor_.post([this, tasks = std::move(tasks), timers = std::move(timers), changed = std::move(changed), then,
                        committed_before, r = std::move(r)]() mutable {
          if (r) after_commit(tasks, timers, changed, *r);
          if (!r && r.status().in_doubt()) after_commit_in_doubt(committed_before, !tasks.empty(), changed);
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
  if (!timers.empty()) check_timers_due(*std::min_element(timers.begin(), timers.end()));
  for (const auto& key : changed) wake_watchers(key);
}

void Engine::add_sticky_tasks(const MutableState& ms) {
  const auto linger = to_nanos(ms.state().sticky_schedule_to_start()) + std::chrono::seconds(1);
  for (TaskRecord task : ms.sticky_tasks()) {
    task.task_id = memory_task_id();
    const QueueKey queue{task.execution.namespace_id, task.kind, task.queue};
    const int64_t id = task.task_id;
    offer(std::move(task));
    deadlines_.schedule(deadlines_.now() + std::chrono::duration_cast<std::chrono::milliseconds>(linger),
                        [this, queue, id] { matching_.remove(queue, id); });
  }
}

void Engine::dispatch(TaskRecord task) {
  if (task.kind == TaskKind::kTransfer) {
    OperationRef in_flight = begin_op();
    if (!in_flight) return;  // closing: the row stays for the next start
    executor_.post([this, task = std::move(task), in_flight]() mutable { run_transfer(std::move(task)); });
  } else {
    offer(std::move(task));
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

void Engine::run_transition_named(const std::string& namespace_id, const v1::WorkflowExecution& execution, StatusOp op,
                                  StatusThen then, Unreadable unreadable, Origin origin, int hops) {
  Result<ExecutionKey> key = resolve(namespace_id, execution);
  if (!key) return then(key.status());
  // A request for "the current run" waited in that run's queue behind a
  // continue-as-new: it follows the chain to the run that is current now
  // (Temporal's behaviour), a bounded number of hops.
  constexpr int kMaxHops = 8;
  auto follow = [this, namespace_id, execution, op, then, unreadable, origin, hops, run_id = key->run_id](Status s) {
    if (s.code() == StatusCode::kFailedPrecondition && execution.run_id().empty() && hops < kMaxHops) {
      Result<ExecutionKey> now = resolve(namespace_id, execution);
      if (now && now->run_id != run_id) {
        return run_transition_named(namespace_id, execution, op, then, unreadable, origin, hops + 1);
      }
    }
    then(std::move(s));
  };
  run_transition(*key, std::move(op), {}, std::move(follow), unreadable, origin);
}

Result<Engine::LoadedExecution> Engine::load_execution(std::string namespace_id,
                                                       const v1::WorkflowExecution& execution) {
  REPRISE_RETURN_IF_ERROR(check_namespace(namespace_id));
  Result<ExecutionKey> key = resolve(namespace_id, execution);
  if (!key) return key.status();
  Result<ExecutionRecord> record = read_execution(*key);
  if (!record) return record.status();
  LoadedExecution out{*key, std::move(record).value(), {}};
  if (!history::parse_stored(out.record.state, out.state)) {
    return Status::data_loss("state of execution " + key->to_string() + " does not parse");
  }
  // Tasks started in memory are started for describe too.
  if (auto held = held_starts_.find(*key); held && held->change.version == out.record.version) {
    out.state = std::move(held->change.state);
  }
  return out;
}

std::string Engine::new_run_id() {
  std::lock_guard lock(random_mu_);
  const uint64_t hi = random_(), lo = random_();
  return history::format_uuid_v4(hi, lo);
}

Deadlines::SteadyTime Engine::poll_deadline() const { return deadlines_.now() + options_.poll_timeout; }

}  // namespace reprise::engine
