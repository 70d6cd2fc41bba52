#include "worker/workflow_instance.hpp"

#include <algorithm>

#include "history/event_builder.hpp"
#include "history/proto_time.hpp"
#include "reprise/detail/failure.hpp"

namespace reprise::worker {

namespace {

std::string describe(const v1::Command& c) {
  switch (c.attributes_case()) {
    case v1::Command::kScheduleActivityTask:
      return "ScheduleActivityTask '" + c.schedule_activity_task().activity_type().name() + "' (activity id " +
             c.schedule_activity_task().activity_id() + ")";
    case v1::Command::kStartTimer:
      return "StartTimer (timer id " + c.start_timer().timer_id() + ")";
    case v1::Command::kCompleteWorkflowExecution:
      return "CompleteWorkflowExecution";
    case v1::Command::kFailWorkflowExecution:
      return "FailWorkflowExecution";
    default:
      return v1::CommandType_Name(c.command_type());
  }
}

std::string describe(const v1::HistoryEvent& e) {
  std::string what = history::event_type_name(e.event_type());
  if (e.has_activity_task_scheduled()) {
    what += " '" + e.activity_task_scheduled().activity_type().name() + "' (activity id " +
            e.activity_task_scheduled().activity_id() + ")";
  } else if (e.has_timer_started()) {
    what += " (timer id " + e.timer_started().timer_id() + ")";
  }
  return what;
}

}  // namespace

WorkflowInstance::WorkflowInstance(std::string workflow_type, WorkflowStarter starter)
    : workflow_type_(std::move(workflow_type)), starter_(std::move(starter)), context_(*this) {
  info_.workflow_type = workflow_type_;
}

WorkflowInstance::~WorkflowInstance() = default;

Result<Activation> WorkflowInstance::apply(const v1::History& events) {
  Activation out;
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
    // task at hand.
    const bool last = i + 1 == events.events_size();
    if (!last && events.events(i + 1).event_type() != v1::EVENT_TYPE_WORKFLOW_TASK_COMPLETED) continue;
    now_ = to_time(e.event_time());
    replaying_ = !last;
    info_.history_length = e.event_id();
    info_.history_size_bytes = e.workflow_task_started().history_size_bytes();
    info_.continue_as_new_suggested = e.workflow_task_started().suggest_continue_as_new();
    if (i > 0 && events.events(i - 1).has_workflow_task_scheduled()) {
      info_.attempt = events.events(i - 1).workflow_task_scheduled().attempt();
    }
    REPRISE_RETURN_IF_ERROR(activate());
    if (last) {
      for (const Issued& issued : issued_) out.commands.push_back(issued.command);
    }
  }
  return out;
}

Status WorkflowInstance::activate() {
  if (!issued_.empty()) {
    return Status::failed_precondition("non-determinism: the workflow issued " + describe(issued_.front().command) +
                                       ", but history has no event for it before workflow task " +
                                       std::to_string(last_event_id_));
  }
  try {
    if (!started_) {
      started_ = true;
      body_ = starter_(context_, input_);
      ready_.push_back(body_->handle());
    }
    while (!ready_.empty()) {
      std::coroutine_handle<> next = ready_.front();
      ready_.pop_front();
      next.resume();
    }
  } catch (const std::exception& e) {
    // Input that does not decode: a bug in a caller or the code, not a
    // workflow outcome. The task fails and is retried after a fix.
    return Status::internal(std::string("workflow '") + workflow_type_ + "' failed to run: " + e.what());
  }
  if (body_->finished() && !completion_issued_) finish_workflow();
  return Status::ok();
}

void WorkflowInstance::finish_workflow() {
  completion_issued_ = true;
  v1::Command c;
  try {
    v1::Payloads result = body_->take_result();
    c.set_command_type(v1::COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION);
    *c.mutable_complete_workflow_execution()->mutable_result() = std::move(result);
  } catch (const std::exception& e) {
    c.set_command_type(v1::COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION);
    *c.mutable_fail_workflow_execution()->mutable_failure() = reprise::detail::failure_of(e);
  }
  issued_.push_back({std::move(c), nullptr});
}

Result<WorkflowInstance::Issued> WorkflowInstance::match(const v1::HistoryEvent& e, v1::CommandType expected,
                                                         const std::string& key) {
  if (issued_.empty()) {
    return Status::failed_precondition("non-determinism: history has event " + std::to_string(e.event_id()) + " " +
                                       describe(e) + ", but the workflow code did nothing there now");
  }
  Issued issued = std::move(issued_.front());
  issued_.pop_front();
  const v1::Command& c = issued.command;
  bool same = c.command_type() == expected;
  if (same && c.has_schedule_activity_task()) {
    same = c.schedule_activity_task().activity_id() == key &&
           c.schedule_activity_task().activity_type().name() == e.activity_task_scheduled().activity_type().name();
  } else if (same && c.has_start_timer()) {
    same = c.start_timer().timer_id() == key;
  }
  if (!same) {
    return Status::failed_precondition("non-determinism at event " + std::to_string(e.event_id()) + ": history has " +
                                       describe(e) + ", the workflow code did " + describe(c) + " now");
  }
  return issued;
}

Status WorkflowInstance::apply_event(const v1::HistoryEvent& e) {
  switch (e.attributes_case()) {
    case v1::HistoryEvent::kWorkflowExecutionStarted: {
      input_ = e.workflow_execution_started().input();
      now_ = to_time(e.event_time());
      // FNV-1a, not std::hash: the seed must be the same for every build.
      uint64_t seed = 14695981039346656037ull;
      for (unsigned char c : e.workflow_execution_started().original_execution_run_id()) {
        seed = (seed ^ c) * 1099511628211ull;
      }
      random_.seed(seed);
      return Status::ok();
    }
    case v1::HistoryEvent::kActivityTaskScheduled: {
      Result<Issued> m = match(e, v1::COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK, e.activity_task_scheduled().activity_id());
      if (!m) return m.status();
      activities_[e.event_id()] = m->pending;
      return Status::ok();
    }
    case v1::HistoryEvent::kActivityTaskCompleted: {
      auto it = activities_.find(e.activity_task_completed().scheduled_event_id());
      if (it == activities_.end()) break;
      it->second->result = e.activity_task_completed().result();
      resolve(it->second);
      activities_.erase(it);
      return Status::ok();
    }
    case v1::HistoryEvent::kActivityTaskFailed:
    case v1::HistoryEvent::kActivityTaskTimedOut:
    case v1::HistoryEvent::kActivityTaskCanceled: {
      int64_t scheduled = 0;
      v1::Failure failure;
      if (e.has_activity_task_failed()) {
        scheduled = e.activity_task_failed().scheduled_event_id();
        failure = e.activity_task_failed().failure();
      } else if (e.has_activity_task_timed_out()) {
        scheduled = e.activity_task_timed_out().scheduled_event_id();
        failure = e.activity_task_timed_out().failure();
      } else {
        scheduled = e.activity_task_canceled().scheduled_event_id();
        failure.set_kind(v1::FAILURE_KIND_CANCELED);
        failure.set_message("canceled");
      }
      auto it = activities_.find(scheduled);
      if (it == activities_.end()) break;
      it->second->failure = failure;
      resolve(it->second);
      activities_.erase(it);
      return Status::ok();
    }
    case v1::HistoryEvent::kTimerStarted: {
      Result<Issued> m = match(e, v1::COMMAND_TYPE_START_TIMER, e.timer_started().timer_id());
      if (!m) return m.status();
      timers_[e.timer_started().timer_id()] = m->pending;
      return Status::ok();
    }
    case v1::HistoryEvent::kTimerFired: {
      auto it = timers_.find(e.timer_fired().timer_id());
      if (it == timers_.end()) break;
      resolve(it->second);
      timers_.erase(it);
      return Status::ok();
    }
    case v1::HistoryEvent::kWorkflowExecutionSignaled: {
      const auto& signaled = e.workflow_execution_signaled();
      auto& waits = signal_waits_[signaled.signal_name()];
      if (waits.empty()) {
        signals_[signaled.signal_name()].push_back(signaled.input());
        return Status::ok();
      }
      std::shared_ptr<detail::Pending> wait = std::move(waits.front());
      waits.pop_front();
      wait->result = signaled.input();
      resolve(wait);
      return Status::ok();
    }
    case v1::HistoryEvent::kWorkflowExecutionCompleted:
      closed_ = true;
      return match(e, v1::COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION, "").status();
    case v1::HistoryEvent::kWorkflowExecutionFailed:
      closed_ = true;
      return match(e, v1::COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION, "").status();
    default:
      return Status::ok();  // scheduling bookkeeping and events this SDK version does not act on yet
  }
  return Status::failed_precondition("non-determinism: history has event " + std::to_string(e.event_id()) + " " +
                                     describe(e) + " for something the workflow code never started");
}

void WorkflowInstance::resolve(const std::shared_ptr<detail::Pending>& pending) {
  pending->ready = true;
  if (!pending->waiter) return;
  const std::coroutine_handle<> waiter = std::exchange(pending->waiter, {});
  // A coroutine waiting on several (any) is made ready once.
  if (std::find(ready_.begin(), ready_.end(), waiter) == ready_.end()) ready_.push_back(waiter);
}

std::shared_ptr<detail::Pending> WorkflowInstance::schedule_activity(v1::ScheduleActivityTaskCommandAttributes a) {
  a.set_activity_id(std::to_string(++activity_seq_));
  auto pending = std::make_shared<detail::Pending>();
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK);
  *c.mutable_schedule_activity_task() = std::move(a);
  issued_.push_back({std::move(c), pending});
  return pending;
}

std::shared_ptr<detail::Pending> WorkflowInstance::start_timer(std::chrono::nanoseconds duration) {
  auto pending = std::make_shared<detail::Pending>();
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_START_TIMER);
  c.mutable_start_timer()->set_timer_id(std::to_string(++timer_seq_));
  set_duration(c.mutable_start_timer()->mutable_start_to_fire_timeout(), duration);
  pending->name = c.start_timer().timer_id();
  issued_.push_back({std::move(c), pending});
  return pending;
}

Result<v1::Payloads> WorkflowInstance::query(const std::string& name) {
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

std::shared_ptr<detail::Pending> WorkflowInstance::next_signal(const std::string& name) {
  auto pending = std::make_shared<detail::Pending>();
  auto& received = signals_[name];
  if (!received.empty()) {
    pending->result = std::move(received.front());
    received.pop_front();
    pending->ready = true;
  } else {
    signal_waits_[name].push_back(pending);
  }
  return pending;
}

}  // namespace reprise::worker
