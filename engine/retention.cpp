// Retention and deletion: closed runs are deleted once they have been closed
// for the retention period (a sweeper thread, in batches), or when a client
// asks (DeleteWorkflowExecution). Deleting a run removes its state, history,
// visibility row, task and timer rows and blob references in one transition,
// and the workflow id's current-run row when it names the run, so the id is
// free again. Its transfer rows stay until carried out: a run deleted right
// after it closed still owes its children their parent-close policies. Blob
// garbage collection then reclaims the blobs nothing else references. A
// running run is never deleted by the sweeper; a request terminates it
// first, as Temporal does.
//
// A delete runs under the id's serializer and then the run's (the order
// start_run takes them in), so it never races a transition of the run or a
// start of the id. A child run is deleted only once its parent has recorded
// its close: the parent reads the close event from the child's history.
#include <condition_variable>
#include <mutex>

#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "engine/request_validation.hpp"
#include "engine/thread_name.hpp"
#include "history/stored_proto.hpp"

namespace reprise::engine {

namespace {

// How long, in all, a requested delete waits for the parent of a run that
// just closed to record the close before it answers UNAVAILABLE.
constexpr auto kParentWaitStep = std::chrono::milliseconds(50);
constexpr int kParentWaitAttempts = 200;  // 10 s
// The reason Temporal records when DeleteWorkflowExecution terminates a run.
constexpr const char* kTerminateReason = "Delete workflow execution";

}  // namespace

// --- DeleteWorkflowExecution ---

void Engine::delete_workflow_execution(v1::DeleteWorkflowExecutionRequest request,
                                       Reply<v1::DeleteWorkflowExecutionResponse> reply) {
  if (!admit(reply)) return;
  if (Status s = validate_request(request); !s) return reply(s);
  std::string ns = request.namespace_();
  if (Status s = check_namespace(ns); !s) return reply(s);
  on_read_pool(reply, [this, ns = std::move(ns), request = std::move(request), reply]() mutable {
    delete_blocking(std::move(ns), std::move(request), std::move(reply));
  });
}

void Engine::delete_blocking(std::string ns, v1::DeleteWorkflowExecutionRequest request,
                             Reply<v1::DeleteWorkflowExecutionResponse> reply) {
  Result<ExecutionKey> key = resolve(ns, request.workflow_execution());
  if (!key) return reply(key.status());
  Result<ExecutionRecord> record = store_.get_execution(*key);
  if (!record) return reply(record.status());
  if (record->status != v1::WORKFLOW_EXECUTION_STATUS_RUNNING) {
    return delete_requested_run(*key, false, 1, std::move(reply));
  }
  const std::string identity = request.identity().empty() ? "reprise-server" : request.identity();
  transition(
      *key, [identity](MutableState& ms) { return to_done(ms.terminate(kTerminateReason, {}, identity)); }, {},
      [this, key = *key, reply](Result<Done> r) {
        // It closed meanwhile (FAILED_PRECONDITION): delete it all the same.
        const bool closed_meanwhile = !r && r.status().code() == StatusCode::kFailedPrecondition;
        if (!r && !closed_meanwhile) return reply(r.status());
        delete_requested_run(key, !closed_meanwhile, 1, reply);
      },
      Unreadable::kSalvage, Origin::kRequest);  // a run whose state does not parse can be deleted too
}

void Engine::delete_requested_run(ExecutionKey key, bool terminated, int attempt,
                                  Reply<v1::DeleteWorkflowExecutionResponse> reply) {
  delete_closed_run(key, DeleteCause::kRequest, [this, key, terminated, attempt, reply](Result<Deleted> r) {
    if (!r) return reply(r.status());
    if (*r == Deleted::kYes) {
      v1::DeleteWorkflowExecutionResponse out;
      out.set_run_id(key.run_id);
      out.set_terminated(terminated);
      return reply(out);
    }
    if (attempt >= kParentWaitAttempts) {
      return reply(Status::unavailable("run " + key.to_string() +
                                       " is closed but its parent has not recorded that yet; try the delete again"));
    }
    OperationRef in_flight = begin_op();
    if (!in_flight) return reply(Status::unavailable("the server is shutting down"));
    deadlines_.schedule(deadlines_.now() + kParentWaitStep, [this, key, terminated, attempt, reply, in_flight] {
      executor_.post([this, key, terminated, attempt, reply, in_flight] {
        if (closing()) return reply(Status::unavailable("the server is shutting down"));
        delete_requested_run(key, terminated, attempt + 1, reply);
      });
    });
  });
}

// --- deleting one closed run ---

Result<Engine::Deleted> Engine::check_deletable(const ExecutionKey& key, DeleteCause cause) {
  Result<ExecutionRecord> record = store_.get_execution(key);
  if (!record) {
    // The sweeper found the run's visibility row: whatever is left of it goes.
    if (record.status().code() == StatusCode::kNotFound && cause == DeleteCause::kRetention) return Deleted::kYes;
    return record.status();
  }
  if (record->status == v1::WORKFLOW_EXECUTION_STATUS_RUNNING) {
    return Status::failed_precondition("run " + key.to_string() + " is running: a running run is never deleted");
  }
  internal::ExecutionState state;
  // A state that does not parse must not keep an operator from deleting it.
  if (!history::parse_stored(record->state, state)) return Deleted::kYes;
  // Only a run that closed its chain tells the parent (a continue-as-new or
  // a retried run does not), and the parent reads how from this run's history.
  if (record->status == v1::WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW || !state.next_run_id().empty() ||
      !state.has_parent_execution()) {
    return Deleted::kYes;
  }
  const ExecutionKey parent{key.namespace_id, state.parent_execution().workflow_id(),
                            state.parent_execution().run_id()};
  Result<ExecutionRecord> parent_record = store_.get_execution(parent);
  if (!parent_record) {
    if (parent_record.status().code() == StatusCode::kNotFound) return Deleted::kYes;
    return parent_record.status();
  }
  if (parent_record->status != v1::WORKFLOW_EXECUTION_STATUS_RUNNING) return Deleted::kYes;
  internal::ExecutionState parent_state;
  if (!history::parse_stored(parent_record->state, parent_state)) return Deleted::kYes;
  auto child = parent_state.children().find(state.parent_initiated_event_id());
  if (child != parent_state.children().end() && child->second.workflow_id() == key.workflow_id) {
    return Deleted::kParentNotTold;
  }
  return Deleted::kYes;
}

void Engine::delete_closed_run(const ExecutionKey& key, DeleteCause cause, std::function<void(Result<Deleted>)> then) {
  OperationRef in_flight = begin_op();
  if (!in_flight) return then(Status::unavailable("the server is shutting down"));
  const ExecutionKey id_key{key.namespace_id, key.workflow_id, ""};
  serializer_.run(id_key, [this, key, cause, then, in_flight](ExecutionSerializer::Done id_done) {
    serializer_.run(key, [this, key, cause, then, in_flight, id_done](ExecutionSerializer::Done run_done) {
      auto answer = [then, id_done, run_done, in_flight](Result<Deleted> r) {
        then(std::move(r));
        run_done();
        id_done();
      };
      Result<Deleted> ready = check_deletable(key, cause);
      if (!ready || *ready != Deleted::kYes) return answer(ready);
      Transition t;
      t.delete_executions.push_back(key);
      commit(std::move(t), [this, key, cause, answer](Result<CommitResult> r) {
        if (!r) return answer(r.status());
        wake_watchers(key);  // its history long-polls answer NOT_FOUND now
        if (cause == DeleteCause::kRequest) {
          log::info("workflow deleted",
                    {{"workflow_id", key.workflow_id}, {"run_id", key.run_id}, {"cause", "request"}});
        } else {
          log::debug("workflow deleted",
                     {{"workflow_id", key.workflow_id}, {"run_id", key.run_id}, {"cause", "retention"}});
        }
        answer(Deleted::kYes);
      });
    });
  });
}

// --- the sweeper ---

Result<RetentionPass> Engine::sweep_retention() {
  std::lock_guard one_pass(sweep_mu_);
  RetentionPass pass;
  for (const NamespaceRecord& ns : namespaces_->all()) {
    const std::chrono::seconds retention = ns.retention.value_or(options_.retention);
    if (retention.count() <= 0) continue;  // kept forever
    Result<RetentionPass> swept = sweep_namespace(ns.name, retention);
    if (!swept) return swept.status().with_context("namespace '" + ns.name + "'");
    pass.deleted += swept->deleted;
    pass.postponed += swept->postponed;
  }
  metrics_.retention_deleted(pass.deleted);
  return pass;
}

Result<RetentionPass> Engine::sweep_namespace(const std::string& namespace_id, std::chrono::seconds retention) {
  RetentionPass pass;
  const TimePoint cutoff = clock_.now() - retention;
  const int batch = std::max(1, options_.retention_batch);
  std::optional<ClosedRun> after;
  Status first_error;
  while (!closing()) {
    Result<std::vector<ClosedRun>> runs = store_.closed_runs(namespace_id, cutoff, after, batch);
    if (!runs) return runs.status().with_context("looking for runs past retention");
    if (runs->empty()) break;
    after = runs->back();
    const size_t found = runs->size();
    // Another node's shards are its own to sweep.
    std::erase_if(*runs, [this](const ClosedRun& run) { return !serves(run.key); });
    // Each run is its own serialized delete; the writer commits the batch
    // in one or a few short transactions, and the next batch waits for it.
    struct Batch {
      std::mutex mu;
      std::condition_variable cv;
      size_t left = 0;
      int64_t deleted = 0;
      int64_t postponed = 0;
      Status error;
    };
    auto b = std::make_shared<Batch>();
    b->left = runs->size();
    for (const ClosedRun& run : *runs) {
      delete_closed_run(run.key, DeleteCause::kRetention, [b](Result<Deleted> r) {
        std::lock_guard lock(b->mu);
        if (r && *r == Deleted::kYes) {
          ++b->deleted;
        } else {
          ++b->postponed;
          if (!r && b->error.is_ok() && r.status().code() != StatusCode::kUnavailable) b->error = r.status();
        }
        if (--b->left == 0) b->cv.notify_all();
      });
    }
    {
      std::unique_lock lock(b->mu);
      b->cv.wait(lock, [&b] { return b->left == 0; });
    }
    pass.deleted += b->deleted;
    pass.postponed += b->postponed;
    if (first_error.is_ok()) first_error = b->error;
    if (static_cast<int>(found) < batch) break;
  }
  if (pass.deleted > 0 || pass.postponed > 0) {
    log::info("retention deleted closed runs", {{"namespace", namespace_id},
                                                {"runs", std::to_string(pass.deleted)},
                                                {"postponed", std::to_string(pass.postponed)},
                                                {"retention_s", std::to_string(retention.count())}});
  }
  if (!first_error.is_ok()) {
    log::error("retention could not delete a run; it is tried again next pass",
               {{"namespace", namespace_id}, {"error", first_error.to_string()}});
  }
  return pass;
}

void Engine::start_retention() {
  // Always: a namespace may set a retention of its own at any time.
  retention_thread_ = std::thread([this] { retention_loop(); });
  name_thread(retention_thread_, "retention");
}

void Engine::stop_retention() {
  {
    std::lock_guard lock(retention_mu_);
    retention_stopping_ = true;
  }
  retention_cv_.notify_all();
  if (retention_thread_.joinable()) retention_thread_.join();
}

void Engine::retention_loop() {
  const auto interval = std::max(options_.retention_sweep_interval, std::chrono::milliseconds(1));
  std::unique_lock lock(retention_mu_);
  while (true) {
    retention_cv_.wait_for(lock, interval, [this] { return retention_stopping_; });
    if (retention_stopping_) return;
    lock.unlock();
    if (Result<RetentionPass> pass = sweep_retention(); !pass) {
      log::error("retention sweep failed", {{"error", pass.status().to_string()}});
    }
    lock.lock();
  }
}

}  // namespace reprise::engine
