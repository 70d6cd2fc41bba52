// The timer loop: one thread that waits for the earliest durable timer row,
// fires what is due (each as a transition of its execution) and moves back a
// timer that keeps failing. It does nothing else, so a timer fires on time
// whatever else the server is busy with (blob collection has its own thread).
// With an EngineRuntime the same loop is stepped instead of run on a thread:
// each pass is a job on the driver's executor and each sleep a deadline on
// its clock, so a wake-up is skipped or taken by the rule production runs.
#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "engine/thread_name.hpp"
#include "history/stored_proto.hpp"
#include "reprise/detail/proto_time.hpp"

namespace reprise::engine {

namespace {

// How far back a timer that keeps failing moves at most: parked, but still
// retried (and logged) now and then.
constexpr std::chrono::nanoseconds kMaxTimerPostpone = std::chrono::minutes(10);

}  // namespace

void Engine::check_timers() {
  {
    std::lock_guard lock(timer_mu_);
    timer_check_requested_ = true;
  }
  timer_cv_.notify_all();
  if (options_.runtime != nullptr) post_timer_pass();
}

void Engine::check_timers_due(TimePoint due) {
  {
    std::lock_guard lock(timer_mu_);
    if (timer_loop_wakes_at_ && due >= *timer_loop_wakes_at_) return;
  }
  check_timers();
}

Engine::TimerLook Engine::fire_due_timers() {
  TimerLook look;
  const TimePoint now = clock_.now();
  // Task starts held in memory whose timeout (or hold limit) is due are
  // committed first, so their timers are in the table for the next look.
  const std::vector<ExecutionKey> held = held_starts_.take_due(now);
  for (const ExecutionKey& key : held) flush_held(key);
  Result<std::vector<TimerRecord>> due = store_.due_timers(now, 256);
  Result<std::optional<TimePoint>> next = store_.next_timer_time();
  if (next) look.next = *next;
  if (std::optional<TimePoint> held_next = held_starts_.next_due();
      held_next && (!look.next || *held_next < *look.next)) {
    look.next = held_next;
  }
  look.launched = held.size();
  if (!due) return look;
  look.due_read = true;
  look.due = due->size();
  std::vector<TimerRecord> launch;
  {
    std::lock_guard lock(timer_mu_);
    for (TimerRecord& t : *due) {
      if (timers_in_flight_.insert(t.timer_id).second) launch.push_back(std::move(t));
    }
  }
  look.launched += launch.size();
  metrics_.timers_due(static_cast<int64_t>(launch.size()));
  for (TimerRecord& t : launch) fire(std::move(t));
  return look;
}

std::chrono::milliseconds Engine::timer_wait(const TimerLook& look) const {
  // Until the next timer is due (rounded up: a sleep that ends before it
  // would only look again), re-checking at least every second, since the
  // clock may be moved by hand.
  auto wait = std::chrono::milliseconds(1000);
  if (look.next.has_value() && (!look.due_read || look.due == 0)) {
    const auto until = std::chrono::ceil<std::chrono::milliseconds>(*look.next - clock_.now());
    wait = std::clamp(until, std::chrono::milliseconds(0), wait);
  }
  return wait;
}

void Engine::timer_loop() {
  name_this_thread("timers");
  std::unique_lock lock(timer_mu_);
  while (!stopping_) {
    timer_check_requested_ = false;
    lock.unlock();
    const TimerLook look = fire_due_timers();
    lock.lock();
    if (look.launched > 0) continue;
    // Sleep until the next timer is due or until asked to look again.
    const std::chrono::milliseconds wait = timer_wait(look);
    timer_loop_wakes_at_ = clock_.now() + wait;
    timer_cv_.wait_for(lock, wait, [this] { return stopping_ || timer_check_requested_; });
    timer_loop_wakes_at_.reset();
  }
}

void Engine::post_timer_pass() {
  std::lock_guard lock(timer_mu_);
  if (timer_pass_posted_ || stopping_) return;  // the pass posted sees the request
  timer_pass_posted_ = true;
  // The loop wakes: its sleep ends, and it looks.
  if (timer_sleep_) deadlines_.cancel(*timer_sleep_);
  timer_sleep_.reset();
  timer_loop_wakes_at_.reset();
  executor_.post([this] { stepped_timer_pass(); });
}

void Engine::stepped_timer_pass() {
  {
    std::lock_guard lock(timer_mu_);
    timer_pass_posted_ = false;
    timer_check_requested_ = false;
  }
  // One pass of timer_loop() above.
  const TimerLook look = fire_due_timers();
  if (look.launched > 0) return post_timer_pass();
  const std::chrono::milliseconds wait = timer_wait(look);
  std::lock_guard lock(timer_mu_);
  if (timer_pass_posted_ || stopping_) return;  // asked to look again meanwhile
  timer_loop_wakes_at_ = clock_.now() + wait;
  timer_sleep_ = deadlines_.schedule(deadlines_.now() + wait, [this] { post_timer_pass(); });
}

void Engine::fire(TimerRecord timer) {
  internal::TimerTask task;
  task.ParseFromString(timer.payload);
  const int64_t id = timer.timer_id;
  const ExecutionKey key = timer.execution;  // `timer` moves into the callback
  transition(
      key, [task](MutableState& ms) { return ms.fire_timer(task); },
      [id](Transition& t) { t.remove_timers.push_back(id); },
      [this, timer = std::move(timer), task](Result<Applied> r) mutable {
        if (r && *r == Applied::kYes) metrics_.timer_fired(task.kind(), clock_.now() - timer.fire_at);
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
  }
  if (look_again) check_timers();
}

}  // namespace reprise::engine
