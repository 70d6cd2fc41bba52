#include "simulation.hpp"

#include <map>
#include <memory>
#include <optional>
#include <set>

#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "engine/store/sqlite_store.hpp"
#include "history/batch_codec.hpp"
#include "history/clock.hpp"
#include "scheduler.hpp"
#include "sim_runtime.hpp"

namespace reprise::sim {

namespace {

using namespace std::chrono_literals;
using engine::Engine;
using engine::FaultPoint;
using engine::SqliteStore;

// ---------------------------------------------------------------- workload
// A generated workflow is a list of steps run one after another; the
// simulated worker's workflow code (decide()) runs it from its history, and
// the reference model (expected_result()) says, without the engine, what it
// must end with.
enum class StepKind { kActivity, kTimer, kSignal };
struct Step {
  StepKind kind = StepKind::kActivity;
  int fail_times = 0;  // activity: attempts that fail before one succeeds
  int seconds = 0;     // timer
};
struct WorkflowSpec {
  std::string id;
  std::vector<Step> steps;
  int signals = 0;  // signal steps: the client sends exactly this many
};

std::string signal_payload(const std::string& workflow_id, int k) { return workflow_id + "/s" + std::to_string(k); }

WorkflowSpec generate(Scheduler& s, int index) {
  WorkflowSpec spec;
  spec.id = "wf-" + std::to_string(index);
  const int steps = 1 + static_cast<int>(s.random(5));
  for (int i = 0; i < steps; ++i) {
    Step step;
    switch (s.random(3)) {
      case 0:
        step.kind = StepKind::kActivity;
        step.fail_times = static_cast<int>(s.random(3));
        break;
      case 1:
        step.kind = StepKind::kTimer;
        step.seconds = 1 + static_cast<int>(s.random(30));
        break;
      default:
        step.kind = StepKind::kSignal;
        ++spec.signals;
        break;
    }
    spec.steps.push_back(step);
  }
  return spec;
}

// The reference model: each step's contribution to the result, in order.
std::string expected_result(const WorkflowSpec& spec) {
  std::string out;
  int signal = 0;
  for (size_t i = 0; i < spec.steps.size(); ++i) {
    if (!out.empty()) out += ",";
    switch (spec.steps[i].kind) {
      case StepKind::kActivity:
        out += "a" + std::to_string(i);
        break;
      case StepKind::kTimer:
        out += "t" + std::to_string(i);
        break;
      case StepKind::kSignal:
        out += signal_payload(spec.id, signal++);
        break;
    }
  }
  return out;
}

v1::Command schedule_activity(size_t step, const Step& s) {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK);
  auto* a = c.mutable_schedule_activity_task();
  a->set_activity_id("a" + std::to_string(step));
  a->mutable_activity_type()->set_name("flaky");
  a->mutable_input()->add_payloads()->set_data(std::to_string(s.fail_times));
  a->mutable_start_to_close_timeout()->set_seconds(10);
  a->mutable_retry_policy()->mutable_initial_interval()->set_seconds(1);
  a->mutable_retry_policy()->set_backoff_coefficient(1.5);
  a->mutable_retry_policy()->mutable_maximum_interval()->set_seconds(10);
  return c;
}

// The workflow code: from the history so far, the commands of this task.
std::vector<v1::Command> decide(const WorkflowSpec& spec, const v1::History& history) {
  std::map<int64_t, std::string> activity_of;  // scheduled event id -> activity id
  std::set<std::string> scheduled, completed, timers_started, timers_fired;
  std::vector<std::string> signals;
  for (const v1::HistoryEvent& e : history.events()) {
    if (e.has_activity_task_scheduled()) {
      activity_of[e.event_id()] = e.activity_task_scheduled().activity_id();
      scheduled.insert(e.activity_task_scheduled().activity_id());
    } else if (e.has_activity_task_completed()) {
      completed.insert(activity_of[e.activity_task_completed().scheduled_event_id()]);
    } else if (e.has_timer_started()) {
      timers_started.insert(e.timer_started().timer_id());
    } else if (e.has_timer_fired()) {
      timers_fired.insert(e.timer_fired().timer_id());
    } else if (e.has_workflow_execution_signaled()) {
      const auto& input = e.workflow_execution_signaled().input();
      signals.push_back(input.payloads_size() > 0 ? input.payloads(0).data() : "");
    }
  }
  std::string out;
  size_t next_signal = 0;
  for (size_t i = 0; i < spec.steps.size(); ++i) {
    const Step& step = spec.steps[i];
    const std::string id = (step.kind == StepKind::kTimer ? "t" : "a") + std::to_string(i);
    std::string part;
    if (step.kind == StepKind::kActivity) {
      if (!scheduled.count(id)) return {schedule_activity(i, step)};
      if (!completed.count(id)) return {};
      part = id;
    } else if (step.kind == StepKind::kTimer) {
      if (!timers_started.count(id)) {
        v1::Command c;
        c.set_command_type(v1::COMMAND_TYPE_START_TIMER);
        c.mutable_start_timer()->set_timer_id(id);
        c.mutable_start_timer()->mutable_start_to_fire_timeout()->set_seconds(step.seconds);
        return {c};
      }
      if (!timers_fired.count(id)) return {};
      part = id;
    } else {
      if (next_signal >= signals.size()) return {};
      part = signals[next_signal++];
    }
    out += (out.empty() ? "" : ",") + part;
  }
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION);
  c.mutable_complete_workflow_execution()->mutable_result()->add_payloads()->set_data(out);
  return {c};
}

// ---------------------------------------------------------------- server
// The engine "process": a real Engine on a real SqliteStore whose writer
// commits only when this host steps it. crash() drops everything in memory;
// start() reopens the file.
class Server {
 public:
  Server(Scheduler& s, ManualClock& clock, std::string path, uint64_t seed)
      : s_(s), clock_(clock), path_(std::move(path)), seed_(seed) {}

  bool up() const { return engine_ != nullptr; }
  Engine& engine() { return *engine_; }
  int incarnation() const { return incarnation_; }
  int crashes() const { return crashes_; }

  void start() {
    engine::StoreOptions options;
    options.durability = engine::Durability::kNormal;  // a process crash keeps what the OS has
    options.read_connections = 2;
    options.quick_check = false;
    options.clock = &clock_;
    options.writer_thread = false;
    options.fault_hook = [this](FaultPoint point) { return at_fault_point(point); };
    auto store = SqliteStore::open(path_, options);
    if (!store) {
      failures_.push_back("store did not reopen: " + store.status().to_string());
      return;
    }
    store_ = std::move(store).value();
    ++incarnation_;
    runtime_ = new SimRuntime(s_);  // leaked with its engine (see crash())
    engine::EngineOptions eo;
    eo.clock = &clock_;
    eo.poll_timeout = 5s;
    eo.max_history_wait = 5s;
    eo.random_seed = seed_ * 1000003 + static_cast<uint64_t>(incarnation_);
    eo.runtime = &runtime_->runtime;
    auto engine = Engine::start(*store_, eo);
    if (!engine) {
      failures_.push_back("engine did not start: " + engine.status().to_string());
      store_.reset();
      return;
    }
    engine_ = std::move(engine).value().release();
    s_.note("server up #" + std::to_string(incarnation_));
  }

  // The process dies: its queued jobs, deadlines and parked calls are gone,
  // and so is what the writer had not committed. The Engine object is
  // abandoned, not destroyed: its shutdown waits for operations whose jobs
  // died with the process, and nothing touches it again.
  void crash(const std::string& why) {
    if (!up()) return;
    s_.note("CRASH " + why);
    ++crashes_;
    runtime_->kill();
    engine_ = nullptr;
    runtime_ = nullptr;
    crash_now_.reset();
    commit_posted_ = false;
    store_.reset();  // fails what was queued; the answers go to the dead runtime
    s_.after(s_.random_duration(100ms, 3s), "restart", [this] { start(); });
  }

  // Arms a crash at the `countdown`th next passage of `point`.
  void arm_commit_crash(FaultPoint point, int countdown) {
    armed_ = point;
    countdown_ = countdown;
  }

  // Called after every step: a commit job whenever the writer has work.
  void pump() {
    if (!up() || commit_posted_ || store_->queued_writes() == 0) return;
    commit_posted_ = true;
    // A short random delay lets batches form, as group commit does.
    s_.after(s_.random_duration(0ms, 3ms), "commit", [this, inc = incarnation_] {
      if (inc != incarnation_) return;
      commit_posted_ = false;
      if (!up()) return;
      store_->commit_next_batch();
      if (crash_now_) crash(*crash_now_ == FaultPoint::kBeforeCommit ? "before commit" : "after commit");
    });
  }

  // Timers become due as virtual time passes; the engine looks when told.
  void tick() {
    if (up()) engine_->check_timers();
  }

  std::vector<std::string>& failures() { return failures_; }

 private:
  Status at_fault_point(FaultPoint point) {
    if (!armed_ || *armed_ != point || --countdown_ > 0) return Status::ok();
    armed_.reset();
    runtime_->kill();  // nothing the engine does with the outcome reaches anyone
    crash_now_ = point;
    return Status::unavailable("simulated crash");
  }

  Scheduler& s_;
  ManualClock& clock_;
  std::string path_;
  uint64_t seed_;
  std::unique_ptr<SqliteStore> store_;
  Engine* engine_ = nullptr;
  SimRuntime* runtime_ = nullptr;
  int incarnation_ = 0;
  int crashes_ = 0;
  bool commit_posted_ = false;
  std::optional<FaultPoint> armed_;
  int countdown_ = 0;
  std::optional<FaultPoint> crash_now_;  // the hook stopped the process here
  std::vector<std::string> failures_;
};

// ---------------------------------------------------------------- network
// Calls from clients and workers: each request and reply crosses with a
// random delay, and while faults are on may be dropped or the request
// duplicated; the caller gives up at its timeout, as an RPC deadline does.
class Network {
 public:
  Network(Scheduler& s, Server& server) : s_(s), server_(server) {}
  void set_faults(bool on) { faults_ = on; }

  template <typename Resp>
  using Invoke = std::function<void(Engine&, engine::Reply<Resp>)>;

  template <typename Resp>
  void call(const std::string& what, Invoke<Resp> invoke, Duration timeout, std::function<void(Result<Resp>)> done) {
    auto finished = std::make_shared<bool>(false);
    auto finish = [finished, done = std::move(done)](Result<Resp> r) {
      if (std::exchange(*finished, true)) return;
      done(std::move(r));
    };
    s_.after(timeout, what + " timeout", [finish] { finish(Status::deadline_exceeded("simulated call timed out")); });
    const int copies = faults_ && s_.chance(0.03) ? 2 : 1;
    for (int i = 0; i < copies; ++i) {
      if (faults_ && s_.chance(0.03)) continue;  // the request is lost
      s_.after(s_.random_duration(0ms, 20ms), what, [this, what, invoke, finish] {
        if (!server_.up()) {
          s_.after(s_.random_duration(0ms, 5ms), what + " refused",
                   [finish] { finish(Status::unavailable("simulated connection refused")); });
          return;
        }
        const int incarnation = server_.incarnation();
        invoke(server_.engine(), [this, what, finish, incarnation](Result<Resp> r) {
          if (!server_.up() || server_.incarnation() != incarnation) return;  // died with the process
          if (faults_ && s_.chance(0.03)) return;                             // the reply is lost
          s_.after(s_.random_duration(0ms, 20ms), what + " reply", [finish, r] { finish(r); });
        });
      });
    }
  }

 private:
  Scheduler& s_;
  Server& server_;
  bool faults_ = false;
};

bool transient(const Status& s) {
  switch (s.code()) {
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kUnavailable:
    case StatusCode::kResourceExhausted:
    case StatusCode::kAborted:
      return true;
    default:
      return false;
  }
}

// ---------------------------------------------------------------- the run
class Simulation {
 public:
  explicit Simulation(const SimOptions& options)
      : options_(options),
        s_(options.seed),
        server_(s_, clock_, options.db_dir + "/sim.db", options.seed),
        network_(s_, server_) {}

  SimResult run();

 private:
  struct Tracked {
    WorkflowSpec spec;
    bool start_acked = false;
    int signals_acked = 0;
    bool closed = false;
  };
  struct SimWorker {
    int generation = 0;
    int workflow_pollers = 1;
    int activity_pollers = 1;
  };

  void fail(const std::string& what) {
    s_.note("FAIL " + what);
    failures_.push_back(what);
  }
  void follow_clock(Duration now) { clock_.set(TimePoint(std::chrono::seconds(1'700'000'000)) + now); }

  void start_workflow(Tracked& w);
  void send_signal(Tracked& w, int k, bool retried);
  void start_worker(int index);
  void workflow_poll(int index, int generation);
  void activity_poll(int index, int generation);
  void check_closed();
  void check_history(Tracked& w, const v1::History& h, v1::WorkflowExecutionStatus status);
  template <typename Resp>
  std::optional<Resp> direct(std::function<void(Engine&, engine::Reply<Resp>)> invoke);

  SimOptions options_;
  Scheduler s_;
  ManualClock clock_;
  Server server_;
  Network network_;
  std::map<std::string, Tracked> workflows_;
  std::vector<SimWorker> workers_;
  std::vector<std::string> failures_;
  int worker_crashes_ = 0;
  bool done_ = false;
  Duration faults_end_{0};
};

void Simulation::start_workflow(Tracked& w) {
  v1::StartWorkflowRequest r;
  r.set_workflow_id(w.spec.id);
  r.mutable_workflow_type()->set_name("generated");
  r.mutable_task_queue()->set_name("sim");
  r.set_request_id("start-" + w.spec.id);
  r.mutable_workflow_task_timeout()->set_seconds(10);
  network_.call<v1::StartWorkflowResponse>(
      "start " + w.spec.id,
      [r](Engine& e, engine::Reply<v1::StartWorkflowResponse> reply) { e.start_workflow(r, reply); }, 10s,
      [this, &w](Result<v1::StartWorkflowResponse> out) {
        if (!out) {
          if (!transient(out.status())) fail("start " + w.spec.id + ": " + out.status().to_string());
          s_.after(s_.random_duration(100ms, 1s), "retry start", [this, &w] { start_workflow(w); });
          return;
        }
        w.start_acked = true;
        if (w.spec.signals > 0) send_signal(w, 0, false);
      });
}

void Simulation::send_signal(Tracked& w, int k, bool retried) {
  v1::SignalWorkflowRequest r;
  r.mutable_workflow_execution()->set_workflow_id(w.spec.id);
  r.set_signal_name("go");
  r.mutable_input()->add_payloads()->set_data(signal_payload(w.spec.id, k));
  r.set_request_id("signal-" + w.spec.id + "-" + std::to_string(k));
  network_.call<v1::SignalWorkflowResponse>(
      "signal " + w.spec.id,
      [r](Engine& e, engine::Reply<v1::SignalWorkflowResponse> reply) { e.signal_workflow(r, reply); }, 10s,
      [this, &w, k, retried](Result<v1::SignalWorkflowResponse> out) {
        // A retry can find the run closed: an earlier try was recorded (its
        // answer lost), and the workflow went on to finish. The engine does
        // not match a retry against a closed run (nor does Temporal); the
        // history check below still demands the signal exactly once.
        if (!out && out.status().code() == StatusCode::kFailedPrecondition && retried) {
          s_.note("signal " + w.spec.id + " found the run closed on a retry");
          w.signals_acked = w.spec.signals;
          return;
        }
        if (!out) {
          if (!transient(out.status())) fail("signal " + w.spec.id + ": " + out.status().to_string());
          s_.after(s_.random_duration(100ms, 1s), "retry signal", [this, &w, k] { send_signal(w, k, true); });
          return;
        }
        w.signals_acked = k + 1;
        if (k + 1 < w.spec.signals) send_signal(w, k + 1, false);
      });
}

void Simulation::start_worker(int index) {
  const int generation = workers_[index].generation;
  for (int i = 0; i < workers_[index].workflow_pollers; ++i) workflow_poll(index, generation);
  for (int i = 0; i < workers_[index].activity_pollers; ++i) activity_poll(index, generation);
}

void Simulation::workflow_poll(int index, int generation) {
  if (done_ || workers_[index].generation != generation) return;  // the worker crashed: this loop is gone
  const std::string identity = "w" + std::to_string(index) + "." + std::to_string(generation);
  v1::PollWorkflowTaskRequest r;
  r.mutable_task_queue()->set_name("sim");
  r.set_identity(identity);
  network_.call<v1::PollWorkflowTaskResponse>(
      "poll-wf " + identity,
      [r](Engine& e, engine::Reply<v1::PollWorkflowTaskResponse> reply) { e.poll_workflow_task(r, reply); }, 8s,
      [this, index, generation, identity](Result<v1::PollWorkflowTaskResponse> out) {
        if (workers_[index].generation != generation) return;
        if (!out || out->task_token().empty()) {
          s_.after(out ? 0ms : 200ms, "poll again", [this, index, generation] { workflow_poll(index, generation); });
          return;
        }
        auto it = workflows_.find(out->workflow_execution().workflow_id());
        if (it == workflows_.end() || out->next_page_token().size() > 0) {
          fail("workflow task for an unknown workflow or with a paged history: " +
               out->workflow_execution().workflow_id());
          return workflow_poll(index, generation);
        }
        v1::CompleteWorkflowTaskRequest c;
        c.set_task_token(out->task_token());
        c.set_identity(identity);
        for (v1::Command& command : decide(it->second.spec, out->history())) *c.add_commands() = std::move(command);
        s_.after(s_.random_duration(0ms, 50ms), "decide", [this, index, generation, c] {
          if (workers_[index].generation != generation) return;
          network_.call<v1::CompleteWorkflowTaskResponse>(
              "complete-wf",
              [c](Engine& e, engine::Reply<v1::CompleteWorkflowTaskResponse> reply) {
                e.complete_workflow_task(c, reply);
              },
              5s,
              [this, index, generation](Result<v1::CompleteWorkflowTaskResponse>) {
                workflow_poll(index, generation);
              });
        });
      });
}

void Simulation::activity_poll(int index, int generation) {
  if (done_ || workers_[index].generation != generation) return;
  const std::string identity = "w" + std::to_string(index) + "." + std::to_string(generation);
  v1::PollActivityTaskRequest r;
  r.mutable_task_queue()->set_name("sim");
  r.set_identity(identity);
  network_.call<v1::PollActivityTaskResponse>(
      "poll-act " + identity,
      [r](Engine& e, engine::Reply<v1::PollActivityTaskResponse> reply) { e.poll_activity_task(r, reply); }, 8s,
      [this, index, generation, identity](Result<v1::PollActivityTaskResponse> out) {
        if (workers_[index].generation != generation) return;
        if (!out || out->task_token().empty()) {
          s_.after(out ? 0ms : 200ms, "poll again", [this, index, generation] { activity_poll(index, generation); });
          return;
        }
        const int fail_times = out->input().payloads_size() > 0 ? std::stoi(out->input().payloads(0).data()) : 0;
        const v1::PollActivityTaskResponse task = *out;
        // The activity runs for a while; a worker crash meanwhile loses it.
        // A first attempt that draws under 200 ms is slow instead: 13-15 s,
        // past its 10 s start-to-close timeout, so it reports while the
        // retry (1 s backoff) runs, and that late outcome must be refused.
        Duration runs = s_.random_duration(0ms, 2s);
        if (task.attempt() == 1 && runs < 200ms) runs = 13s + runs * 10;
        s_.after(runs, "activity " + task.activity_id(), [this, index, generation, identity, task, fail_times] {
          if (workers_[index].generation != generation) return;
          auto again = [this, index, generation](auto) { activity_poll(index, generation); };
          if (task.attempt() <= fail_times) {
            v1::FailActivityRequest f;
            f.set_task_token(task.task_token());
            f.set_identity(identity);
            f.mutable_failure()->set_message("simulated failure");
            network_.call<v1::FailActivityResponse>(
                "fail-act",
                [f](Engine& e, engine::Reply<v1::FailActivityResponse> reply) { e.fail_activity(f, reply); }, 5s,
                again);
            return;
          }
          v1::CompleteActivityRequest c;
          c.set_task_token(task.task_token());
          c.set_identity(identity);
          // The result names the attempt, so the history shows whose outcome was taken.
          c.mutable_result()->add_payloads()->set_data(task.activity_id() + "@" + std::to_string(task.attempt()));
          network_.call<v1::CompleteActivityResponse>(
              "complete-act",
              [c](Engine& e, engine::Reply<v1::CompleteActivityResponse> reply) { e.complete_activity(c, reply); }, 5s,
              again);
        });
      });
}

// A call made by the simulator itself (not a client): straight to the
// engine, the scheduler run until it answers.
template <typename Resp>
std::optional<Resp> Simulation::direct(std::function<void(Engine&, engine::Reply<Resp>)> invoke) {
  if (!server_.up()) return std::nullopt;
  auto answer = std::make_shared<std::optional<Result<Resp>>>();
  const int incarnation = server_.incarnation();
  invoke(server_.engine(), [answer](Result<Resp> r) { *answer = std::move(r); });
  while (!answer->has_value() && server_.up() && server_.incarnation() == incarnation) {
    server_.pump();
    if (!s_.step()) break;
  }
  if (!answer->has_value() || !answer->value()) return std::nullopt;
  return *answer->value();
}

void Simulation::check_history(Tracked& w, const v1::History& h, v1::WorkflowExecutionStatus status) {
  const std::string& id = w.spec.id;
  if (status != v1::WORKFLOW_EXECUTION_STATUS_COMPLETED) {
    fail(id + " closed with status " + std::to_string(status) + ", the model says completed");
  }
  std::vector<std::string> signals;
  std::map<int64_t, int> activity_closes, wt_closes;
  std::map<std::string, int> timer_closes;
  std::map<int64_t, int> started_attempt;  // ActivityTaskStarted event id -> its attempt
  std::set<int64_t> wt_scheduled, wt_started;
  bool closed = false;
  for (int i = 0; i < h.events_size(); ++i) {
    const v1::HistoryEvent& e = h.events(i);
    if (e.event_id() != i + 1) fail(id + ": event " + std::to_string(i) + " has id " + std::to_string(e.event_id()));
    if (closed) fail(id + ": event " + std::to_string(e.event_id()) + " after the close event");
    if (e.has_workflow_execution_completed()) {
      closed = true;
      const auto& result = e.workflow_execution_completed().result();
      const std::string got = result.payloads_size() > 0 ? result.payloads(0).data() : "";
      if (got != expected_result(w.spec))
        fail(id + ": result '" + got + "', the model says '" + expected_result(w.spec) + "'");
    }
    if (e.has_workflow_execution_failed() || e.has_workflow_execution_timed_out() ||
        e.has_workflow_execution_terminated() || e.has_workflow_execution_canceled() ||
        e.has_workflow_execution_continued_as_new()) {
      closed = true;
    }
    if (e.has_workflow_execution_signaled()) {
      const auto& input = e.workflow_execution_signaled().input();
      signals.push_back(input.payloads_size() > 0 ? input.payloads(0).data() : "");
    }
    if (e.has_activity_task_started()) started_attempt[e.event_id()] = e.activity_task_started().attempt();
    if (e.has_activity_task_completed()) {
      ++activity_closes[e.activity_task_completed().scheduled_event_id()];
      // Only the attempt that is running may close it: a late outcome of
      // an attempt that timed out must be refused.
      const auto& result = e.activity_task_completed().result();
      const std::string got = result.payloads_size() > 0 ? result.payloads(0).data() : "";
      const std::string by = got.substr(got.find('@') == std::string::npos ? got.size() : got.find('@') + 1);
      const int64_t started = e.activity_task_completed().started_event_id();
      const std::string running =
          started_attempt.count(started) ? std::to_string(started_attempt[started]) : std::string("none");
      if (by != running) {
        fail(id + ": activity scheduled at " + std::to_string(e.activity_task_completed().scheduled_event_id()) +
             " completed with '" + got + "' while attempt " + running + " was running");
      }
    }
    if (e.has_activity_task_failed()) ++activity_closes[e.activity_task_failed().scheduled_event_id()];
    if (e.has_activity_task_timed_out()) ++activity_closes[e.activity_task_timed_out().scheduled_event_id()];
    if (e.has_activity_task_canceled()) ++activity_closes[e.activity_task_canceled().scheduled_event_id()];
    if (e.has_timer_fired()) ++timer_closes[e.timer_fired().timer_id()];
    if (e.has_timer_canceled()) ++timer_closes[e.timer_canceled().timer_id()];
    if (e.has_workflow_task_scheduled()) wt_scheduled.insert(e.event_id());
    if (e.has_workflow_task_started()) {
      const int64_t sched = e.workflow_task_started().scheduled_event_id();
      if (!wt_scheduled.count(sched))
        fail(id + ": workflow task started for unknown scheduled event " + std::to_string(sched));
      if (!wt_started.insert(e.event_id()).second) fail(id + ": duplicate started event");
    }
    if (e.has_workflow_task_completed()) ++wt_closes[e.workflow_task_completed().started_event_id()];
    if (e.has_workflow_task_failed()) ++wt_closes[e.workflow_task_failed().started_event_id()];
    if (e.has_workflow_task_timed_out() && e.workflow_task_timed_out().started_event_id() != 0) {
      ++wt_closes[e.workflow_task_timed_out().started_event_id()];
    }
  }
  if (!closed) fail(id + ": history has no close event");
  for (auto& [sched, n] : activity_closes) {
    if (n > 1)
      fail(id + ": activity scheduled at " + std::to_string(sched) + " closed " + std::to_string(n) + " times");
  }
  for (auto& [timer, n] : timer_closes) {
    if (n > 1) fail(id + ": timer " + timer + " closed " + std::to_string(n) + " times");
  }
  for (auto& [started, n] : wt_closes) {
    if (!wt_started.count(started))
      fail(id + ": workflow task closed for unknown started event " + std::to_string(started));
    if (n > 1)
      fail(id + ": workflow task started at " + std::to_string(started) + " closed " + std::to_string(n) +
           " times (a task token honoured twice)");
  }
  std::vector<std::string> expected;
  for (int k = 0; k < w.spec.signals; ++k) expected.push_back(signal_payload(id, k));
  if (signals != expected) {
    std::string got;
    for (const auto& s : signals) got += s + " ";
    fail(id + ": signals recorded [" + got + "], each acknowledged signal must appear exactly once, in order");
  }
}

void Simulation::check_closed() {
  if (done_) return;
  bool all = true;
  for (auto& [id, w] : workflows_) {
    if (w.closed) continue;
    if (!w.start_acked || w.signals_acked < w.spec.signals || !server_.up()) {
      all = false;
      continue;
    }
    v1::DescribeWorkflowRequest d;
    d.mutable_workflow_execution()->set_workflow_id(id);
    auto described = direct<v1::DescribeWorkflowResponse>(
        [d](Engine& e, engine::Reply<v1::DescribeWorkflowResponse> reply) { e.describe_workflow(d, reply); });
    if (!described || described->info().status() == v1::WORKFLOW_EXECUTION_STATUS_RUNNING) {
      all = false;
      continue;
    }
    v1::GetHistoryRequest g;
    g.mutable_workflow_execution()->set_workflow_id(id);
    g.set_maximum_page_size(10000);
    auto history = direct<v1::GetHistoryResponse>(
        [g](Engine& e, engine::Reply<v1::GetHistoryResponse> reply) { e.get_history(g, reply); });
    if (!history) {
      all = false;
      continue;
    }
    w.closed = true;
    s_.note("closed " + id);
    check_history(w, history->history(), described->info().status());
  }
  if (all) done_ = true;
}

SimResult Simulation::run() {
  follow_clock(s_.now());
  s_.on_advance([this](Duration now) { follow_clock(now); });
  server_.start();
  const int workflow_count = 2 + static_cast<int>(s_.random(7));
  for (int i = 0; i < workflow_count; ++i) {
    WorkflowSpec spec = generate(s_, i);
    const std::string id = spec.id;
    Tracked& w = workflows_[id];
    w.spec = std::move(spec);
    s_.after(s_.random_duration(0ms, 5s), "client " + id, [this, &w] { start_workflow(w); });
  }
  const int worker_count = 1 + static_cast<int>(s_.random(3));
  for (int i = 0; i < worker_count; ++i) {
    SimWorker worker;
    worker.workflow_pollers = 1 + static_cast<int>(s_.random(2));
    worker.activity_pollers = 1 + static_cast<int>(s_.random(2));
    workers_.push_back(worker);
    start_worker(i);
  }

  // Faults in the first minutes; then none, and every workflow must close.
  faults_end_ = s_.random_duration(30s, 300s);
  network_.set_faults(true);
  s_.after(faults_end_, "faults end", [this] { network_.set_faults(false); });
  const int engine_crashes = static_cast<int>(s_.random(4));
  for (int i = 0; i < engine_crashes; ++i) {
    s_.after(s_.random_duration(1s, faults_end_), "crash", [this] {
      if (s_.chance(0.5)) {
        server_.crash("between jobs");
      } else {
        server_.arm_commit_crash(s_.chance(0.5) ? FaultPoint::kBeforeCommit : FaultPoint::kAfterCommit,
                                 1 + static_cast<int>(s_.random(5)));
      }
    });
  }
  const int worker_crashes = static_cast<int>(s_.random(4));
  for (int i = 0; i < worker_crashes; ++i) {
    const int index = static_cast<int>(s_.random(workers_.size()));
    s_.after(s_.random_duration(1s, faults_end_), "worker crash", [this, index] {
      ++worker_crashes_;
      ++workers_[index].generation;
      s_.note("worker " + std::to_string(index) + " crashed");
      s_.after(s_.random_duration(100ms, 5s), "worker restart", [this, index] { start_worker(index); });
    });
  }

  // The timer tick and the closure check, every virtual second / 10 seconds.
  std::function<void()> tick = [&] {
    server_.tick();
    if (!done_) s_.after(1s, "tick", tick);
  };
  s_.after(1s, "tick", tick);
  std::function<void()> check = [&] {
    if (s_.now() > faults_end_) check_closed();
    if (!done_) s_.after(10s, "check", check);
  };
  s_.after(10s, "check", check);

  const Duration bound = faults_end_ + 30min;
  while (!done_ && s_.now() < bound) {
    server_.pump();
    if (!s_.step()) break;
  }
  if (!done_) {
    std::string open;
    for (auto& [id, w] : workflows_) {
      if (!w.closed) {
        open += id + (w.start_acked ? "" : " (start not acknowledged)") + " ";
      }
    }
    fail("not every workflow closed within 30 virtual minutes after the faults ended: " + open);
  }
  for (auto& f : server_.failures()) failures_.push_back(f);

  SimResult result;
  result.ok = failures_.empty();
  result.failures = failures_;
  result.trace.assign(s_.recent().begin(), s_.recent().end());
  result.trace_hash = s_.trace_hash();
  result.steps = s_.steps();
  result.workflows = workflow_count;
  result.engine_crashes = server_.crashes();
  result.worker_crashes = worker_crashes_;
  result.virtual_seconds = std::chrono::duration<double>(s_.now()).count();
  return result;
}

}  // namespace

SimResult run_simulation(const SimOptions& options) {
  log::set_level(options.verbose ? log::Level::kInfo : log::Level::kOff);
  Simulation simulation(options);
  return simulation.run();
}

}  // namespace reprise::sim
