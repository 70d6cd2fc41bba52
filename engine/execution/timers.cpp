// User timers: started and canceled by workflow commands, fired by their
// durable timer row.
#include "engine/execution/mutable_state.hpp"
#include "engine/execution/state_util.hpp"
#include "reprise/detail/proto_time.hpp"

namespace reprise::engine {

using namespace state_util;

Status MutableState::start_timer(const v1::StartTimerCommandAttributes& t, int64_t completed_event_id,
                                 const std::string& where) {
  if (t.timer_id().empty()) return Status::invalid_argument(where + ": timer_id is required");
  if (t.timer_id().size() > config_.max_id_length) return Status::invalid_argument(where + ": timer_id is too long");
  if (!positive(t.start_to_fire_timeout())) {
    return Status::invalid_argument(where + ": start_to_fire_timeout must be positive");
  }
  if (state_.timers().contains(t.timer_id())) {
    return Status::invalid_argument(where + ": timer '" + t.timer_id() + "' is already running");
  }
  v1::HistoryEvent e;
  auto* a = e.mutable_timer_started();
  a->set_timer_id(t.timer_id());
  *a->mutable_start_to_fire_timeout() = t.start_to_fire_timeout();
  a->set_workflow_task_completed_event_id(completed_event_id);
  const int64_t started = append(std::move(e)).event_id();
  const TimePoint fire_at = now_ + to_nanos(t.start_to_fire_timeout());
  internal::TimerInfo& info = (*state_.mutable_timers())[t.timer_id()];
  info.set_timer_id(t.timer_id());
  info.set_started_event_id(started);
  set_time(info.mutable_fire_time(), fire_at);
  internal::TimerTask task;
  task.set_kind(internal::TimerTask::KIND_USER_TIMER);
  task.set_timer_id(t.timer_id());
  task.set_scheduled_event_id(started);
  add_timer(fire_at, task);
  return Status::ok();
}

Status MutableState::cancel_timer(const std::string& timer_id, int64_t completed_event_id, const std::string& where) {
  int64_t started_event_id = 0;
  if (auto it = state_.mutable_timers()->find(timer_id); it != state_.mutable_timers()->end()) {
    started_event_id = it->second.started_event_id();
    state_.mutable_timers()->erase(it);
  } else {
    // It fired while the workflow's task ran: the code canceled a timer it
    // has not seen fire, so the fire is dropped and the cancel stands (as
    // Temporal does) instead of failing the task.
    auto* buffered = state_.mutable_buffered_events();
    for (auto e = buffered->begin(); e != buffered->end(); ++e) {
      if (e->has_timer_fired() && e->timer_fired().timer_id() == timer_id) {
        started_event_id = e->timer_fired().started_event_id();
        buffered->erase(e);
        break;
      }
    }
    if (started_event_id == 0) return Status::invalid_argument(where + ": timer '" + timer_id + "' is not running");
  }
  v1::HistoryEvent e;
  auto* a = e.mutable_timer_canceled();
  a->set_timer_id(timer_id);
  a->set_started_event_id(started_event_id);
  a->set_workflow_task_completed_event_id(completed_event_id);
  append(std::move(e));
  return Status::ok();
}

Result<Applied> MutableState::fire_user_timer(const internal::TimerTask& t) {
  auto it = state_.mutable_timers()->find(t.timer_id());
  if (it == state_.mutable_timers()->end() || it->second.started_event_id() != t.scheduled_event_id()) {
    return stale();
  }
  v1::HistoryEvent e;
  e.mutable_timer_fired()->set_timer_id(t.timer_id());
  e.mutable_timer_fired()->set_started_event_id(it->second.started_event_id());
  state_.mutable_timers()->erase(it);
  deliver(std::move(e));
  return Applied::kYes;
}

}  // namespace reprise::engine
