// Transfer tasks: work a transition leaves for another execution (start a
// child, tell a parent its child closed, apply a parent-close policy). The
// task row commits with the transition that creates it and is removed by the
// transition that carries it out, so each survives a crash; a failed attempt
// (a lost race on a version or a current run) is retried after a pause.
#include "engine/engine.hpp"
#include "engine/log.hpp"

namespace reprise::engine {

namespace {

constexpr auto kTransferRetryDelay = std::chrono::milliseconds(200);

}  // namespace

void Engine::run_transfer(TaskRecord task) {
  internal::TransferTask transfer;
  if (!transfer.ParseFromString(task.payload)) {
    log::error("dropping a transfer task whose payload does not parse",
               {{"task_id", std::to_string(task.task_id)}, {"execution", task.execution.to_string()}});
    return drop_task(task.task_id);
  }
  const int64_t task_id = task.task_id;
  auto remove_row = [task_id](Transition& t) { t.remove_tasks.push_back(task_id); };
  auto retry_on_error = [this, task](Result<MutableState*> r) {
    // NOT_FOUND: the execution is gone and transition() dropped the row.
    if (!r && r.status().code() != StatusCode::kNotFound) retry_transfer(task);
  };
  using K = internal::TransferTask;
  switch (transfer.kind()) {
    case K::KIND_START_CHILD: {
      v1::History initiated;
      int64_t next = 0;
      if (Status s = fill_history(task.execution, transfer.initiated_event_id(), 1, initiated, next); !s) {
        return retry_transfer(task);
      }
      if (initiated.events_size() != 1 || !initiated.events(0).has_start_child_workflow_execution_initiated()) {
        return drop_task(task_id);  // the parent's history is gone
      }
      const auto attributes = initiated.events(0).start_child_workflow_execution_initiated();
      Result<CurrentRun> current = store_.get_current_run(task.execution.namespace_id, attributes.workflow_id());
      if (!current && current.status().code() != StatusCode::kNotFound) return retry_transfer(task);
      std::optional<CurrentRun> existing;
      if (current) existing = *current;
      const int64_t initiated_id = transfer.initiated_event_id();
      return transition(
          task.execution,
          [=, child_run = new_run_id()](MutableState& ms) {
            return ms.start_child(initiated_id, attributes, existing, child_run).status();
          },
          remove_row, retry_on_error);
    }
    case K::KIND_CHILD_CLOSED: {
      const ExecutionKey child{task.execution.namespace_id, transfer.child().workflow_id(), transfer.child().run_id()};
      Result<ExecutionRecord> record = store_.get_execution(child);
      if (!record) {
        if (record.status().code() == StatusCode::kNotFound) return drop_task(task_id);
        return retry_transfer(task);
      }
      v1::History last;
      int64_t next = 0;
      if (Status s = fill_history(child, record->next_event_id - 1, 1, last, next); !s || last.events_size() != 1) {
        return retry_transfer(task);
      }
      return transition(
          task.execution,
          [transfer, close_event = last.events(0)](MutableState& ms) {
            return ms.record_child_closed(transfer.initiated_event_id(), transfer.child(), close_event).status();
          },
          remove_row, retry_on_error);
    }
    case K::KIND_PARENT_CLOSE_POLICY: {
      Result<CurrentRun> current = store_.get_current_run(task.execution.namespace_id, task.execution.workflow_id);
      if (!current) {
        if (current.status().code() == StatusCode::kNotFound) return drop_task(task_id);
        return retry_transfer(task);
      }
      const ExecutionKey child{task.execution.namespace_id, task.execution.workflow_id, current->run_id};
      return transition(
          child,
          [transfer](MutableState& ms) {
            return ms.apply_parent_close_policy(transfer.parent(), transfer.policy()).status();
          },
          remove_row, retry_on_error);
    }
    default:
      log::error("dropping a transfer task of unknown kind", {{"task_id", std::to_string(task_id)},
                                                              {"execution", task.execution.to_string()},
                                                              {"kind", std::to_string(transfer.kind())}});
      return drop_task(task_id);
  }
}

void Engine::retry_transfer(TaskRecord task) {
  // The pause and the retry it posts are one operation, so shutdown waits
  // for the retry to run rather than letting it touch a destroyed engine.
  OperationRef in_flight = begin_op();
  if (!in_flight) return;  // the row stays; the next start picks it up
  log::debug("transfer task retried",
             {{"task_id", std::to_string(task.task_id)}, {"execution", task.execution.to_string()}});
  deadlines_.schedule(
      std::chrono::steady_clock::now() + kTransferRetryDelay, [this, task = std::move(task), in_flight]() mutable {
        if (closing()) return;
        executor_.post([this, task = std::move(task), in_flight]() mutable { run_transfer(std::move(task)); });
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
