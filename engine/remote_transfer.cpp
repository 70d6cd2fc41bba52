// Transfer tasks across shards (docs/cluster.md): the node that serves a
// task's own execution runs it, as Temporal's transfer queue does; when the
// target's shard is another node's, it asks that node to apply the target
// side (ClusterService.ApplyTransfer), then records the outcome and removes
// the row in its own shard. Every target side is idempotent, so a task
// retried after a crash between the two (the row is still there) applies
// nothing twice:
//   START_CHILD: the child starts with a request id fixed by the parent's run
//     and initiated event; a retry finds the run it started and records that
//     (here, or on this node if the child's shard has come here meanwhile).
//   CHILD_CLOSED: the parent records the close once; a retry finds the child
//     gone from its pending children.
//   PARENT_CLOSE_POLICY: terminating a closed run, or asking a run whose
//     cancel was asked already, changes nothing.
//   SIGNAL/CANCEL_EXTERNAL: the signal carries the sender's request id, which
//     the target records once; a second cancel request changes nothing.
#include "engine/engine.hpp"
#include "engine/log.hpp"

namespace reprise::engine {

// --- the source's side ---

internal::RemoteTransfer Engine::remote_request(const TaskRecord& task, const internal::TransferTask& transfer) const {
  internal::RemoteTransfer request;
  request.set_namespace_(task.execution.namespace_id);
  request.mutable_source()->set_workflow_id(task.execution.workflow_id);
  request.mutable_source()->set_run_id(task.execution.run_id);
  *request.mutable_task() = transfer;
  internal::TaskToken credential;
  credential.set_namespace_(task.execution.namespace_id);
  credential.set_workflow_id(task.execution.workflow_id);
  credential.set_run_id(task.execution.run_id);
  credential.set_scheduled_event_id(std::max<int64_t>(1, transfer.initiated_event_id()));
  credential.set_transfer_credential(true);
  request.set_credential(options_.config.task_tokens->encode(credential));
  return request;
}

void Engine::send_transfer(const TaskRecord& task, int attempt, const ExecutionKey& target,
                           const internal::RemoteTransfer& request,
                           std::function<void(const internal::RemoteTransferOutcome&)> then) {
  const std::string address = shards_->owner_address(shards_->shard_of(target));
  if (address.empty()) {
    return retry_transfer(task, attempt,
                          Status::unavailable("no live node serves the shard of " + target.workflow_id + " now"));
  }
  if (options_.transfer_peers == nullptr) {
    return retry_transfer(task, attempt, Status::unavailable("this node cannot reach the node at " + address));
  }
  OperationRef in_flight = begin_op();
  if (!in_flight) return;  // closing: the row stays for the next owner
  options_.transfer_peers->apply(
      address, request,
      [this, task, attempt, address, then = std::move(then),
       in_flight](Result<internal::RemoteTransferOutcome> outcome) mutable {
        executor_.post([this, task = std::move(task), attempt, address, then = std::move(then),
                        outcome = std::move(outcome), in_flight]() mutable {
          if (!outcome) {
            return retry_transfer(std::move(task), attempt,
                                  outcome.status().with_context("applying it on the node at " + address));
          }
          then(*outcome);
        });
      });
}

void Engine::start_child_remotely(TaskRecord task, const internal::TransferTask& transfer,
                                  const v1::HistoryEvent& initiated, int attempt) {
  const int64_t initiated_id = transfer.initiated_event_id();
  // Only while the parent still waits for this start: a parent that closed
  // first never starts the child (as on one node).
  Result<ExecutionRecord> record = store_.get_execution(task.execution);
  if (!record) {
    if (record.status().code() == StatusCode::kNotFound) return drop_task(task.task_id);
    return retry_transfer(task, attempt, record.status());
  }
  Result<MutableState> parent = MutableState::load(*record, clock_.now(), options_.config);
  if (!parent) return retry_transfer(task, attempt, parent.status());
  if (!parent->child_start_pending(initiated_id)) return drop_task(task.task_id);

  internal::RemoteTransfer request = remote_request(task, transfer);
  *request.mutable_event() = initiated;
  request.set_request_id(MutableState::child_start_request_id(task.execution, initiated_id));
  const auto& attributes = initiated.start_child_workflow_execution_initiated();
  const ExecutionKey child_id{task.execution.namespace_id, attributes.workflow_id(), ""};
  send_transfer(task, attempt, child_id, request,
                [this, task, attempt, initiated_id, attributes](const internal::RemoteTransferOutcome& out) {
                  const int64_t task_id = task.task_id;
                  transition(
                      task.execution,
                      [initiated_id, attributes, out](MutableState& ms) {
                        if (out.cause() != v1::EXTERNAL_FAILURE_CAUSE_UNSPECIFIED) {
                          return ms.record_child_start_failed(initiated_id, attributes, out.cause());
                        }
                        return ms.record_child_started(initiated_id, attributes, out.run_id());
                      },
                      [task_id](Transition& t) { t.remove_tasks.push_back(task_id); },
                      [this, task, attempt](Result<Applied> r) {
                        if (!r && r.status().code() != StatusCode::kNotFound) retry_transfer(task, attempt, r.status());
                      });
                });
}

// --- the target's side ---

void Engine::apply_remote_transfer(internal::RemoteTransfer request, Reply<internal::RemoteTransferOutcome> reply) {
  // Its store reads (current runs, histories) stay off the caller's thread.
  on_read_pool(reply, [this, request = std::move(request), reply]() mutable {
    apply_transfer_here(std::move(request), std::move(reply));
  });
}

void Engine::apply_transfer_here(internal::RemoteTransfer request, Reply<internal::RemoteTransferOutcome> reply) {
  // Only a node of this cluster can sign a credential (it reads the key from
  // the database); one that is missing, damaged or signed with another key
  // is no credential at all. A worker's task token is signed with the same
  // key but is not a node's credential, nor is one for another execution.
  Result<internal::TaskToken> signed_by = options_.config.task_tokens->decode(request.credential());
  if (!signed_by) {
    return reply(Status::unauthenticated("ApplyTransfer needs a credential signed by a node of this cluster: " +
                                         signed_by.status().message()));
  }
  if (!signed_by->transfer_credential()) {
    return reply(Status::permission_denied("ApplyTransfer was given a worker's task token, not a node's credential"));
  }
  if (signed_by->namespace_() != request.namespace_() || signed_by->workflow_id() != request.source().workflow_id() ||
      signed_by->run_id() != request.source().run_id()) {
    return reply(Status::permission_denied("ApplyTransfer's credential was signed for another source execution than " +
                                           request.source().workflow_id() + "/" + request.source().run_id()));
  }
  std::string ns = request.namespace_();
  if (Status s = check_namespace(ns); !s) return reply(s);
  const ExecutionKey source{ns, request.source().workflow_id(), request.source().run_id()};
  const internal::TransferTask& transfer = request.task();
  // Refused unless this node serves the target's shard: the source retries,
  // and finds the new owner.
  auto not_here = [this, &reply](const ExecutionKey& target) {
    if (!remote_target(target)) return false;
    reply(not_served(target));
    return true;
  };
  auto applied = [reply](Status s) {
    if (!s) return reply(s);
    reply(internal::RemoteTransferOutcome());
  };

  using K = internal::TransferTask;
  switch (transfer.kind()) {
    case K::KIND_START_CHILD: {
      if (!request.event().has_start_child_workflow_execution_initiated()) {
        return reply(Status::invalid_argument("START_CHILD without its initiated event"));
      }
      const auto& a = request.event().start_child_workflow_execution_initiated();
      if (not_here({ns, a.workflow_id(), ""})) return;
      v1::StartWorkflowRequest start = MutableState::child_start_request(source, a);
      start.set_workflow_id_reuse_policy(a.workflow_id_reuse_policy());
      start.set_request_id(request.request_id());
      return start_run(
          ns, std::move(start), std::nullopt,
          [reply](Result<v1::StartWorkflowResponse> started) {
            internal::RemoteTransferOutcome out;
            if (started) {
              out.set_run_id(started->run_id());  // started now, or by an earlier attempt
            } else if (started.status().code() == StatusCode::kAlreadyExists) {
              out.set_cause(v1::EXTERNAL_FAILURE_CAUSE_ALREADY_EXISTS);
            } else if (started.status().code() == StatusCode::kInvalidArgument) {
              // Attributes recorded before the command was checked as it is
              // now: a permanent refusal, as on one node.
              out.set_cause(v1::EXTERNAL_FAILURE_CAUSE_REFUSED);
            } else {
              return reply(started.status());
            }
            reply(out);
          },
          MutableState::child_lineage(source, transfer.initiated_event_id()));
    }
    case K::KIND_CHILD_CLOSED: {
      const ExecutionKey parent{ns, transfer.parent().workflow_id(), transfer.parent().run_id()};
      if (parent.workflow_id.empty() || parent.run_id.empty()) {
        return reply(Status::invalid_argument("CHILD_CLOSED without its parent"));
      }
      if (not_here(parent)) return;
      return transition(
          parent,
          [transfer, close_event = request.event()](MutableState& ms) -> Result<Applied> {
            Result<Applied> r = ms.record_child_closed(transfer.initiated_event_id(), transfer.child(), close_event);
            if (r && *r == Applied::kStale) ms.change_nothing();  // recorded already, or nothing to record
            return r;
          },
          {},
          [applied](Result<Applied> r) {
            // NOT_FOUND: the parent is gone; nothing left to tell.
            applied(r || r.status().code() == StatusCode::kNotFound ? Status::ok() : r.status());
          });
    }
    case K::KIND_PARENT_CLOSE_POLICY: {
      const std::string& child_id = transfer.child().workflow_id();
      if (child_id.empty()) return reply(Status::invalid_argument("PARENT_CLOSE_POLICY without its child"));
      if (not_here({ns, child_id, ""})) return;
      Result<CurrentRun> current = store_.get_current_run(ns, child_id);
      if (!current) {
        return applied(current.status().code() == StatusCode::kNotFound ? Status::ok() : current.status());
      }
      return apply_parent_close_policy({ns, child_id, current->run_id}, transfer, {}, applied);
    }
    case K::KIND_SIGNAL_EXTERNAL:
    case K::KIND_CANCEL_EXTERNAL: {
      const v1::HistoryEvent& e = request.event();
      const bool cancel = transfer.kind() == K::KIND_CANCEL_EXTERNAL;
      const v1::WorkflowExecution& target =
          cancel ? e.request_cancel_external_workflow_execution_initiated().workflow_execution()
                 : e.signal_external_workflow_execution_initiated().workflow_execution();
      if (cancel != e.has_request_cancel_external_workflow_execution_initiated() ||
          (!cancel && !e.has_signal_external_workflow_execution_initiated()) || target.workflow_id().empty()) {
        return reply(Status::invalid_argument("an external request without its initiated event"));
      }
      if (not_here({ns, target.workflow_id(), ""})) return;
      return deliver_external_here(source, e, request.request_id(), [reply](Result<v1::ExternalFailureCause> cause) {
        if (!cause) return reply(cause.status());
        internal::RemoteTransferOutcome out;
        out.set_cause(*cause);
        reply(out);
      });
    }
    default:
      return reply(Status::invalid_argument("a transfer of unknown kind " + std::to_string(transfer.kind())));
  }
}

}  // namespace reprise::engine
