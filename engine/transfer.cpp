// Transfer tasks: work a transition leaves for another execution (start a
// child, tell a parent its child closed, apply a parent-close policy). The
// task row commits with the transition that creates it, in that execution's
// shard, and is removed by the transition that carries it out, so each
// survives a crash. When another node serves the target's shard, the target
// side is applied there (remote_transfer.cpp) and the row removed here after.
// A failed attempt
// (a lost race on a version or a current run, a store error) is retried
// after a pause that doubles with each attempt; a task that keeps failing
// is logged loudly. Failures the task can never get past (a child the
// server refuses to create) are recorded in history instead.
#include "engine/engine.hpp"
#include "engine/log.hpp"

namespace reprise::engine {

namespace {

constexpr auto kFirstRetryDelay = std::chrono::milliseconds(200);
constexpr auto kMaxRetryDelay = std::chrono::milliseconds(60'000);
constexpr int kQuietAttempts = 5;  // retries logged at debug level before warnings start

std::chrono::milliseconds retry_delay(int attempt) {
  auto delay = kFirstRetryDelay;
  for (int i = 1; i < attempt && delay < kMaxRetryDelay; ++i) delay *= 2;
  return std::min(delay, kMaxRetryDelay);
}

}  // namespace

void Engine::run_transfer(TaskRecord task, int attempt) {
  if (!serves(task.execution)) return;  // its shard moved: the new owner runs it
  internal::TransferTask transfer;
  if (!transfer.ParseFromString(task.payload)) {
    log::error("dropping a transfer task whose payload does not parse",
               {{"task_id", std::to_string(task.task_id)}, {"execution", task.execution.to_string()}});
    return drop_task(task.task_id);
  }
  const int64_t task_id = task.task_id;
  auto remove_row = [task_id](Transition& t) { t.remove_tasks.push_back(task_id); };
  auto retry = [this, &task, attempt](const Status& why) { retry_transfer(task, attempt, why); };
  auto retry_on_error = [this, task, attempt](Result<Applied> r) {
    // NOT_FOUND: the execution is gone and transition() dropped the row.
    if (!r && r.status().code() != StatusCode::kNotFound) retry_transfer(task, attempt, r.status());
  };
  using K = internal::TransferTask;
  switch (transfer.kind()) {
    case K::KIND_START_CHILD: {
      v1::History initiated;
      int64_t next = 0;
      if (Status s = fill_history(task.execution, transfer.initiated_event_id(), 1, initiated, next,
                                  transfer.initiated_event_id());
          !s) {
        return retry(s);
      }
      if (initiated.events_size() != 1 || !initiated.events(0).has_start_child_workflow_execution_initiated()) {
        return drop_task(task_id);  // the parent's history is gone
      }
      const auto attributes = initiated.events(0).start_child_workflow_execution_initiated();
      if (remote_target({task.execution.namespace_id, attributes.workflow_id(), ""})) {
        return start_child_remotely(std::move(task), transfer, initiated.events(0), attempt);
      }
      Result<CurrentRun> current = store_.get_current_run(task.execution.namespace_id, attributes.workflow_id());
      if (!current && current.status().code() != StatusCode::kNotFound) return retry(current.status());
      std::optional<CurrentRun> existing;
      if (current) existing = *current;
      const int64_t initiated_id = transfer.initiated_event_id();
      return transition(
          task.execution,
          [=, child_run = new_run_id()](MutableState& ms) {
            return ms.start_child(initiated_id, attributes, existing, child_run);
          },
          remove_row, retry_on_error);
    }
    case K::KIND_CHILD_CLOSED: {
      // The row is the child's; one written before it was kept there is the parent's.
      v1::WorkflowExecution parent_execution = transfer.parent();
      if (!transfer.has_parent()) {
        parent_execution.set_workflow_id(task.execution.workflow_id);
        parent_execution.set_run_id(task.execution.run_id);
      }
      const ExecutionKey parent{task.execution.namespace_id, parent_execution.workflow_id(), parent_execution.run_id()};
      const ExecutionKey child{task.execution.namespace_id, transfer.child().workflow_id(), transfer.child().run_id()};
      Result<ExecutionRecord> record = store_.get_execution(child);
      if (!record) {
        if (record.status().code() == StatusCode::kNotFound) return drop_task(task_id);
        return retry(record.status());
      }
      v1::History last;
      int64_t next = 0;
      if (Status s = fill_history(child, record->next_event_id - 1, 1, last, next, record->next_event_id - 1); !s)
        return retry(s);
      if (last.events_size() != 1) return retry(Status::data_loss("the child's close event is missing"));
      if (remote_target(parent)) {
        internal::RemoteTransfer request = remote_request(task, transfer);
        *request.mutable_task()->mutable_parent() = parent_execution;
        *request.mutable_event() = last.events(0);
        return send_transfer(task, attempt, parent, request,
                             [this, task_id](const internal::RemoteTransferOutcome&) { drop_task(task_id); });
      }
      return transition(
          parent,
          [transfer, close_event = last.events(0)](MutableState& ms) {
            return ms.record_child_closed(transfer.initiated_event_id(), transfer.child(), close_event);
          },
          remove_row, retry_on_error);
    }
    case K::KIND_PARENT_CLOSE_POLICY: {
      // The row is the parent's; one written before it was kept there is the child id's.
      const std::string child_id = transfer.has_child() ? transfer.child().workflow_id() : task.execution.workflow_id;
      if (remote_target({task.execution.namespace_id, child_id, ""})) {
        internal::RemoteTransfer request = remote_request(task, transfer);
        request.mutable_task()->mutable_child()->set_workflow_id(child_id);
        return send_transfer(task, attempt, {task.execution.namespace_id, child_id, ""}, request,
                             [this, task_id](const internal::RemoteTransferOutcome&) { drop_task(task_id); });
      }
      Result<CurrentRun> current = store_.get_current_run(task.execution.namespace_id, child_id);
      if (!current) {
        if (current.status().code() == StatusCode::kNotFound) return drop_task(task_id);
        return retry(current.status());
      }
      const ExecutionKey child{task.execution.namespace_id, child_id, current->run_id};
      return apply_parent_close_policy(child, transfer, remove_row, [this, task, attempt](Status s) {
        if (!s) retry_transfer(task, attempt, s);
      });
    }
    case K::KIND_SIGNAL_EXTERNAL:
    case K::KIND_CANCEL_EXTERNAL:
      return deliver_external(std::move(task), transfer, attempt);
    default:
      log::error("dropping a transfer task of unknown kind", {{"task_id", std::to_string(task_id)},
                                                              {"execution", task.execution.to_string()},
                                                              {"kind", std::to_string(transfer.kind())}});
      return drop_task(task_id);
  }
}

void Engine::apply_parent_close_policy(ExecutionKey child, internal::TransferTask transfer, RowRemoval extra,
                                       std::function<void(Status)> done) {
  transition(
      child,
      [transfer, has_row = static_cast<bool>(extra)](MutableState& ms) {
        Result<std::string> next_run = ms.apply_parent_close_policy(transfer.parent(), transfer.policy());
        if (!has_row && ms.found_stale()) ms.change_nothing();  // nothing to apply, no row to drop
        return next_run;
      },
      extra,
      [this, transfer, child, extra, done](Result<std::string> next_run) mutable {
        if (!next_run) {
          // NOT_FOUND: the run is gone (and transition() dropped the row).
          return done(next_run.status().code() == StatusCode::kNotFound ? Status::ok() : next_run.status());
        }
        // The run closed into the next of its chain after the id was looked
        // up: the policy follows the chain (the row stays until it lands).
        if (next_run->empty()) return done(Status::ok());
        child.run_id = *next_run;
        apply_parent_close_policy(std::move(child), std::move(transfer), std::move(extra), std::move(done));
      });
}

void Engine::retry_transfer(TaskRecord task, int attempt, const Status& why) {
  // The pause and the retry it posts are one operation, so shutdown waits
  // for the retry to run rather than letting it touch a destroyed engine.
  OperationRef in_flight = begin_op();
  if (!in_flight) return;  // the row stays; the next start picks it up
  const auto delay = retry_delay(attempt);
  const bool quiet = attempt < kQuietAttempts;
  log::write(quiet ? log::Level::kDebug : log::Level::kWarn,
             quiet ? "transfer task retried" : "transfer task keeps failing",
             {{"task_id", std::to_string(task.task_id)},
              {"execution", task.execution.to_string()},
              {"attempt", std::to_string(attempt)},
              {"retry_in_ms", std::to_string(delay.count())},
              {"error", why.to_string()}});
  deadlines_.schedule(deadlines_.now() + delay, [this, task = std::move(task), attempt, in_flight]() mutable {
    if (closing()) return;
    executor_.post(
        [this, task = std::move(task), attempt, in_flight]() mutable { run_transfer(std::move(task), attempt + 1); });
  });
}

void Engine::drop_task(int64_t task_id) {
  Transition t;
  t.remove_tasks.push_back(task_id);
  OperationRef in_flight = begin_op();
  if (!in_flight) return;
  commit(std::move(t), [in_flight](Result<CommitResult>) {});
}

}  // namespace reprise::engine
