// WorkflowInstance, the replay side: applying history events, running
// activations, matching commands to their events. The commands the code
// issues are in workflow_commands.cpp.
#include "worker/workflow_instance.hpp"

#include <algorithm>

#include "reprise/detail/failure.hpp"
#include "reprise/detail/proto_time.hpp"
#include "worker/machines/close_machine.hpp"
#include "worker/machines/nondeterminism.hpp"

namespace reprise::worker {

namespace {

// Exceptions that are how a workflow ends, as opposed to bugs in its code.
bool is_workflow_outcome(const std::exception& e) {
  return dynamic_cast<const ApplicationError*>(&e) != nullptr || dynamic_cast<const ActivityError*>(&e) != nullptr ||
         dynamic_cast<const ChildWorkflowError*>(&e) != nullptr ||
         dynamic_cast<const ExternalWorkflowError*>(&e) != nullptr || dynamic_cast<const CanceledError*>(&e) != nullptr;
}

}  // namespace

WorkflowInstance::WorkflowInstance(std::string workflow_type, std::shared_ptr<const WorkflowStarter> starter,
                                   PanicPolicy panic)
    : workflow_type_(std::move(workflow_type)), starter_(std::move(starter)), panic_(panic), context_(*this) {
  info_.workflow_type = workflow_type_;
}

uint64_t WorkflowInstance::next_random() {
  if (!random_) random_ = std::make_unique<std::mt19937_64>(random_seed_);
  return (*random_)();
}

size_t WorkflowInstance::approximate_bytes() const {
  // A map node, a Pending and its shared_ptr control block, about.
  constexpr size_t kPerPending = 256;
  size_t bytes = sizeof(*this) + static_cast<size_t>(std::max<int64_t>(0, frames_.bytes.load()));
  bytes += (by_event_id_.size() + timers_.size() + commands_.size() + local_activities_.size()) * kPerPending;
  if (random_) bytes += sizeof(*random_);
  bytes += signals_->approximate_bytes(kPerPending);
  for (const auto& [seq, value] : recorded_markers_.side_effects) bytes += value.ByteSizeLong();
  return bytes;
}

WorkflowInstance::~WorkflowInstance() {
  signals_.reset();
  // Branch frames hold tasks and futures of the body's state: free them first.
  for (std::coroutine_handle<> branch : branches_) branch.destroy();
  body_.reset();
}

ApplyResult WorkflowInstance::apply(const v1::History& events) { return apply_events(events, true); }

ApplyResult WorkflowInstance::replay_completed(const v1::History& events) { return apply_events(events, false); }

Status WorkflowInstance::nondeterminism(NonDeterminism divergence) {
  diverged_ = true;
  return Status::failed_precondition(std::move(divergence.message));
}

ApplyResult WorkflowInstance::apply_events(const v1::History& events, bool run_last_task) {
  Activation out;
  Status applied = [&]() -> Status {
    recorded_markers_.note(events);
    for (int i = 0; i < events.events_size(); ++i) {
      const v1::HistoryEvent& e = events.events(i);
      if (e.event_id() != last_event_id_ + 1) {
        return Status::invalid_argument("history continues at event " + std::to_string(e.event_id()) +
                                        ", the instance is at event " + std::to_string(last_event_id_));
      }
      last_event_id_ = e.event_id();
      if (e.event_type() != v1::EVENT_TYPE_WORKFLOW_TASK_STARTED) {
        REPRISE_RETURN_IF_ERROR(apply_event(e));
        continue;
      }
      // A task history shows completed was an activation: replay it. One that
      // failed or timed out left nothing behind: skip it. The last one is the
      // task at hand (unless only completed tasks are to run).
      const bool last = i + 1 == events.events_size();
      if (last && !run_last_task) continue;
      if (!last && events.events(i + 1).event_type() != v1::EVENT_TYPE_WORKFLOW_TASK_COMPLETED) continue;
      now_ = to_time(e.event_time());
      replaying_ = !last;
      info_.history_length = e.event_id();
      info_.history_size_bytes = e.workflow_task_started().history_size_bytes();
      info_.continue_as_new_suggested = e.workflow_task_started().suggest_continue_as_new();
      if (i > 0 && events.events(i - 1).has_workflow_task_scheduled()) {
        info_.workflow_task_attempt = events.events(i - 1).workflow_task_scheduled().attempt();
      }
      REPRISE_RETURN_IF_ERROR(activate());
      if (last) {
        for (const auto& machine : commands_) out.commands.push_back(machine->command());
      }
    }
    // A history that ends after a completed task (an exported one) must hold
    // every command that task's code issued.
    const bool ends_in_task = events.events_size() > 0 && events.events(events.events_size() - 1).event_type() ==
                                                              v1::EVENT_TYPE_WORKFLOW_TASK_STARTED;
    if (!ends_in_task && !commands_.empty()) {
      return nondeterminism(nondeterminism::unrecorded_command(
          commands_.front()->command(), "(it ends at event " + std::to_string(last_event_id_) + ")"));
    }
    return Status::ok();
  }();
  if (applied.is_ok()) return out;
  if (diverged_) return NonDeterminism{applied.message()};
  return applied;
}

Status WorkflowInstance::activate() {
  if (!commands_.empty()) {
    return nondeterminism(nondeterminism::unrecorded_command(commands_.front()->command(),
                                                             "before workflow task " + std::to_string(last_event_id_)));
  }
  if (completion_issued_) return Status::ok();  // a task after closing (rejected close): nothing runs
  if (!started_) {
    started_ = true;
    detail::ChargeFramesTo charge(frames_);
    try {
      body_ = (*starter_)(context_, input_, [this](const v1::Payload& p) { return load_payload(p); });
    } catch (const std::exception& e) {
      return Status::internal(std::string("workflow '") + workflow_type_ + "' failed to run: " + e.what());
    }
    v1::Payloads().Swap(&input_);  // decoded into the body's frame; not needed again
    ready_.push_back(body_->handle());
  }
  if (cancel_requested_ && !cancel_delivered_) deliver_cancel_request();
  return run_until_blocked();
}

Status WorkflowInstance::run_until_blocked() {
  detail::ChargeFramesTo charge(frames_);
  try {
    // A finished branch's frame, freed, may drop a wait whose unread value
    // then resolves another: run until nothing is ready.
    do {
      while (!ready_.empty() && !continue_as_new_) {
        std::coroutine_handle<> next = ready_.front();
        ready_.pop_front();
        next.resume();
      }
      reap_finished_branches();
    } while ((!ready_.empty() || resolve_recorded_local_activities()) && !continue_as_new_);
  } catch (const std::exception& e) {
    // Input that does not decode, a throwing helper the body did not catch:
    // a bug in a caller or the code, not a workflow outcome. The task fails
    // and is retried after a fix.
    return Status::internal(std::string("workflow '") + workflow_type_ + "' failed to run: " + e.what());
  }
  if (completion_issued_) return Status::ok();
  if (continue_as_new_) {
    completion_issued_ = true;
    commands_.push_back(std::make_shared<CloseMachine>(std::move(*continue_as_new_)));
  } else if (body_->finished()) {
    return finish_workflow();
  }
  return Status::ok();
}

Status WorkflowInstance::finish_workflow() {
  completion_issued_ = true;
  v1::Command c;
  try {
    v1::Payloads result = body_->take_result();
    c.set_command_type(v1::COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION);
    *c.mutable_complete_workflow_execution()->mutable_result() = std::move(result);
  } catch (const CanceledError& e) {
    if (cancel_requested_) {
      c.set_command_type(v1::COMMAND_TYPE_CANCEL_WORKFLOW_EXECUTION);
      c.mutable_cancel_workflow_execution();
    } else {  // the code canceled its own work and let that escape: a failure like any other
      c.set_command_type(v1::COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION);
      *c.mutable_fail_workflow_execution()->mutable_failure() = reprise::detail::failure_of(e);
    }
  } catch (const std::exception& e) {
    if (!is_workflow_outcome(e) && panic_ == PanicPolicy::kFailTask) {
      completion_issued_ = false;
      return Status::internal(std::string("workflow '") + workflow_type_ + "' threw: " + e.what());
    }
    c.set_command_type(v1::COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION);
    *c.mutable_fail_workflow_execution()->mutable_failure() = reprise::detail::failure_of(e);
  }
  commands_.push_back(std::make_shared<CloseMachine>(std::move(c)));
  return Status::ok();
}

bool WorkflowInstance::resolve_recorded_local_activities() {
  if (!replaying_ || completion_issued_) return false;
  // The worker resolves every local activity of a round together, once the
  // code waits; the ones this task's completion recorded are that round.
  bool resolved = false;
  for (auto it = local_activities_.begin(); it != local_activities_.end();) {
    auto recorded = recorded_markers_.local_activities.find((*it)->seq());
    if (recorded == recorded_markers_.local_activities.end() ||
        recorded->second.workflow_task_completed_event_id() != last_event_id_ + 1) {
      ++it;
      continue;
    }
    (*it)->resolve(LocalActivityMachine::recorded_outcome(recorded->second), *this);
    recorded_markers_.local_activities.erase(recorded);
    commands_.push_back(*it);
    it = local_activities_.erase(it);
    resolved = true;
  }
  return resolved;
}

std::vector<std::shared_ptr<LocalActivityMachine>> WorkflowInstance::local_activities() const {
  if (completion_issued_) return {};
  return {local_activities_.begin(), local_activities_.end()};
}

ApplyResult WorkflowInstance::resolve_local_activities(const std::vector<LocalActivityOutcome>& outcomes) {
  auto outcome = outcomes.begin();
  for (; outcome != outcomes.end() && !local_activities_.empty(); ++outcome) {
    local_activities_.front()->resolve(*outcome, *this);
    commands_.push_back(std::move(local_activities_.front()));
    local_activities_.pop_front();
  }
  return activation_result(run_until_blocked());
}

ApplyResult WorkflowInstance::activation_result(const Status& status) const {
  if (status.is_ok()) {
    Activation out;
    for (const auto& machine : commands_) out.commands.push_back(machine->command());
    return out;
  }
  if (diverged_) return NonDeterminism{status.message()};
  return status;
}

void WorkflowInstance::reap_finished_branches() {
  std::erase_if(branches_, [](std::coroutine_handle<> branch) {
    if (!branch.done()) return false;
    branch.destroy();
    return true;
  });
}

Status WorkflowInstance::apply_event(const v1::HistoryEvent& e) {
  const EventOwner owner = owner_of(e);
  if (owner.by_command_order) return apply_recorded_command(e, owner);
  switch (owner.key.index) {
    case MachineKey::Index::kEventId:
      return apply_outcome(e, by_event_id_, owner.key.event_id, owner.unknown);
    case MachineKey::Index::kTimerId:
      return apply_outcome(e, timers_, owner.key.timer_id, owner.unknown);
    case MachineKey::Index::kNone:
      break;
  }
  return apply_workflow_event(e);
}

Status WorkflowInstance::apply_recorded_command(const v1::HistoryEvent& e, const EventOwner& owner) {
  if (commands_.empty() || !commands_.front()->matches(e)) {
    if (MarkerMachine::is_patch(e)) return Status::ok();  // the patched() call is gone: its marker asks nothing
    if (commands_.empty()) return nondeterminism(nondeterminism::unissued_event(e));
    return nondeterminism(nondeterminism::mismatch(e, commands_.front()->command()));
  }
  std::shared_ptr<CommandMachine> machine = std::move(commands_.front());
  commands_.pop_front();
  if (auto divergence = machine->apply(e, *this)) return nondeterminism(std::move(*divergence));
  if (owner.closes_run) closed_ = true;
  // An event with a key records the command of a machine that has a future.
  if (owner.key.index != MachineKey::Index::kNone) reindex(owner.key, std::static_pointer_cast<FutureMachine>(machine));
  return Status::ok();
}

template <typename Index, typename Key>
Status WorkflowInstance::apply_outcome(const v1::HistoryEvent& e, Index& index, const Key& key, const char* unknown) {
  auto it = index.find(key);
  if (it == index.end()) return nondeterminism(nondeterminism::unknown_owner(e, unknown));
  if (auto divergence = it->second->apply(e, *this)) return nondeterminism(std::move(*divergence));
  if (!it->second->awaits_outcome()) index.erase(it);
  return Status::ok();
}

void WorkflowInstance::reindex(const MachineKey& key, const std::shared_ptr<FutureMachine>& machine) {
  const bool keep = machine->awaits_outcome();
  if (key.index == MachineKey::Index::kEventId) {
    if (keep) {
      by_event_id_[key.event_id] = machine;
    } else {
      by_event_id_.erase(key.event_id);
    }
  } else if (keep) {
    timers_[std::string(key.timer_id)] = machine;
  } else if (auto it = timers_.find(key.timer_id); it != timers_.end()) {
    timers_.erase(it);
  }
}

std::shared_ptr<FutureMachine> WorkflowInstance::recorded_machine(
    const std::shared_ptr<detail::Pending>& pending) const {
  if (auto it = by_event_id_.find(pending->event_id); it != by_event_id_.end() && it->second->pending() == pending) {
    return it->second;
  }
  if (auto it = timers_.find(pending->name); it != timers_.end() && it->second->pending() == pending) return it->second;
  return nullptr;
}

Status WorkflowInstance::apply_workflow_event(const v1::HistoryEvent& e) {
  switch (e.attributes_case()) {
    case v1::HistoryEvent::kWorkflowExecutionStarted: {
      input_ = e.workflow_execution_started().input();
      if (to_nanos(e.workflow_execution_started().workflow_task_timeout()).count() > 0) {
        workflow_task_timeout_ = to_nanos(e.workflow_execution_started().workflow_task_timeout());
      }
      info_.attempt = std::max(1, e.workflow_execution_started().attempt());
      now_ = to_time(e.event_time());
      // Seeded from the history, so a replay draws what the run drew: the
      // run's own id (older histories: the chain's first run), as Temporal
      // seeds from original_execution_run_id. FNV-1a, not std::hash: the
      // seed must be the same for every build.
      uint64_t seed = 14695981039346656037ull;
      for (unsigned char c : e.workflow_execution_started().original_execution_run_id()) {
        seed = (seed ^ c) * 1099511628211ull;
      }
      random_seed_ = seed;
      return Status::ok();
    }
    case v1::HistoryEvent::kWorkflowExecutionSignaled: {
      const auto& signaled = e.workflow_execution_signaled();
      if (auto wait = signals_->deliver(signaled.signal_name(), e.event_id(), signaled.input())) resolve(wait);
      return Status::ok();
    }
    case v1::HistoryEvent::kWorkflowExecutionCancelRequested:
      cancel_requested_ = true;  // delivered to the code at the next activation
      return Status::ok();
    case v1::HistoryEvent::kWorkflowExecutionTerminated:
    case v1::HistoryEvent::kWorkflowExecutionTimedOut:
      closed_ = true;
      return Status::ok();
    default:
      return Status::ok();  // workflow-task bookkeeping, activity starts
  }
}

v1::Payload WorkflowInstance::load_payload(const v1::Payload& claim_check) {
  if (blobs_ == nullptr) {
    throw PayloadError("workflow '" + workflow_type_ + "' read a claim-check payload, and no blob store is connected");
  }
  return blobs_->resolve(claim_check);
}

Result<v1::Payloads> WorkflowInstance::query(const std::string& name) {
  if (!started_) {
    // Running the first activation would run the code of a task that has
    // not completed (its side effects too) for state that may never exist.
    return Status::failed_precondition("workflow '" + workflow_type_ + "' has completed no workflow task: query '" +
                                       name + "' has no state to read");
  }
  if (body_ != nullptr && body_->finished()) {
    // The workflow function has returned or thrown: the state its handlers
    // read (its locals, captured by reference) ended with it.
    return Status::failed_precondition("workflow '" + workflow_type_ + "' has returned: query '" + name +
                                       "' is answered only while the workflow function runs (its handlers read "
                                       "state that ended with it)");
  }
  auto it = query_handlers_.find(name);
  if (it == query_handlers_.end()) {
    std::string known;
    for (const auto& [handled, handler] : query_handlers_) known += (known.empty() ? "" : ", ") + handled;
    return Status::not_found("workflow '" + workflow_type_ + "' has no query '" + name +
                             "' (it answers: " + (known.empty() ? "none" : known) + ")");
  }
  try {
    return it->second();
  } catch (const std::exception& e) {
    return Status::internal("query '" + name + "' failed: " + e.what());
  }
}

}  // namespace reprise::worker
