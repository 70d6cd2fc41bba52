#include "simulation.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "generated_workflow.hpp"
#include "network.hpp"
#include "reprise/clock.hpp"
#include "reprise/testing.hpp"
#include "scheduler.hpp"
#include "sim_server.hpp"
#include "sim_worker.hpp"
#include "workload.hpp"

namespace reprise::sim {

namespace {

using namespace std::chrono_literals;
using engine::Engine;
using engine::FaultPoint;

// ---------------------------------------------------------------- workload
// The workload (workload.hpp) is a list of workflows, each a list of steps
// run one after another: the input of the SDK workflow the simulated
// workers run (generated_workflow.hpp). The reference model
// (model_parts(), model_outcome()) says, without the engine or the SDK,
// what each must end with.

std::string signal_payload(const std::string& workflow_id, int k) { return workflow_id + "/s" + std::to_string(k); }

// The string a result or signal carries ("" when it has none or is not one).
std::string decoded(const v1::Payloads& payloads) {
  if (payloads.payloads_size() == 0) return "";
  try {
    return from_payload<std::string>(payloads.payloads(0), "the value");
  } catch (const PayloadError& e) {
    return std::string("(not a string: ") + e.what() + ")";
  }
}

bool continues_as_new(const WorkflowSpec& spec) {
  for (const Step& step : spec.steps) {
    if (step.kind == StepKind::kContinue) return true;
  }
  return false;
}

// The reference model: for each part of the result, in order, the values
// it may have (one, except where a race's winner cannot be told from the
// steps).
using Parts = std::vector<std::set<std::string>>;

// `upgraded`: the workers' code changes from version 1 to 2 mid-run, so a
// patch step took either path (check_patches() says which it must have).
Parts model_parts(const std::string& id, const std::vector<Step>& steps, bool upgraded) {
  Parts out;
  int signal = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string n = std::to_string(i);
    const Step& step = steps[i];
    switch (step.kind) {
      case StepKind::kActivity:
        out.push_back({"a" + n});
        break;
      case StepKind::kTimer:
        out.push_back({"t" + n});
        break;
      case StepKind::kSignal:
        out.push_back({signal_payload(id, signal++)});
        break;
      case StepKind::kAll:
        out.push_back({"A" + n});
        break;
      case StepKind::kRace:
        if (step.seconds >= kRaceLongTimer) {
          out.push_back({"R" + n + "a"});
        } else {
          out.push_back({"R" + n + "a", "R" + n + "t"});
        }
        break;
      case StepKind::kChild: {
        if (step.left_running) {
          out.push_back({"C" + n});
          break;
        }
        // Every combination of the child's own parts, joined by ';'.
        std::set<std::string> results{""};
        for (const auto& allowed : model_parts(step.child_id, step.child, upgraded)) {
          std::set<std::string> longer;
          for (const auto& so_far : results) {
            for (const auto& part : allowed) longer.insert(so_far + (so_far.empty() ? "" : ";") + part);
          }
          results = std::move(longer);
        }
        std::set<std::string> parts;
        for (const auto& r : results) parts.insert("c" + n + "(" + r + ")");
        out.push_back(std::move(parts));
        break;
      }
      case StepKind::kSideEffect:
        out.push_back({"s" + n});
        break;
      case StepKind::kLocal:
        out.push_back({"l" + n});
        break;
      case StepKind::kHeartbeat:
        out.push_back({"h" + n});
        break;
      case StepKind::kScheduleToClose:
        out.push_back({"x" + n});
        break;
      case StepKind::kPatch:
        if (upgraded) {
          out.push_back({"P" + n, "O" + n});
        } else {
          out.push_back({"P" + n});
        }
        break;
      case StepKind::kAwaitCancel:
      case StepKind::kContinue:
      case StepKind::kSignalParent:
      case StepKind::kFail:
        break;
    }
  }
  return out;
}

// How a run must close, and whether it ran its cleanup: a top-level run as
// its ending says; an awaited child completes; a child left running meets
// its parent-close policy when its parent closes first: terminated;
// canceled, with its cleanup; or, abandoned, it runs to its own result.
struct Outcome {
  v1::WorkflowExecutionStatus status = v1::WORKFLOW_EXECUTION_STATUS_COMPLETED;
  int cleanups = 0;
};

Outcome model_outcome(const WorkflowSpec& spec) {
  using Ending = WorkflowSpec::Ending;
  using ParentClose = ChildWorkflowOptions::ParentClose;
  if (spec.left_running) {
    switch (spec.parent_close) {
      case ParentClose::kTerminate:
        return {v1::WORKFLOW_EXECUTION_STATUS_TERMINATED, 0};
      case ParentClose::kRequestCancel:
        return {v1::WORKFLOW_EXECUTION_STATUS_CANCELED, 1};
      case ParentClose::kAbandon:
        return {v1::WORKFLOW_EXECUTION_STATUS_COMPLETED, 0};
    }
  }
  switch (spec.ending) {
    case Ending::kFail:
      return {v1::WORKFLOW_EXECUTION_STATUS_FAILED, 0};
    case Ending::kCancel:
      return {v1::WORKFLOW_EXECUTION_STATUS_CANCELED, 1};
    case Ending::kTerminate:
      return {v1::WORKFLOW_EXECUTION_STATUS_TERMINATED, 0};
    case Ending::kComplete:
      break;
  }
  return {};
}

// The client closes it (cancel or terminate) once it waits for that.
bool closed_by_client(const WorkflowSpec& spec) {
  return spec.ending == WorkflowSpec::Ending::kCancel || spec.ending == WorkflowSpec::Ending::kTerminate;
}

std::vector<std::string> left_running_children(const WorkflowSpec& spec) {
  std::vector<std::string> out;
  for (const Step& step : spec.steps) {
    if (step.kind == StepKind::kChild && step.left_running) out.push_back(step.child_id);
  }
  return out;
}

std::vector<std::string> split_parts(const std::string& result) {
  std::vector<std::string> out;
  if (result.empty()) return out;
  size_t from = 0;
  for (size_t comma; (comma = result.find(',', from)) != std::string::npos; from = comma + 1) {
    out.push_back(result.substr(from, comma - from));
  }
  out.push_back(result.substr(from));
  return out;
}

// Whether `result` is the model's whole result (`whole`) or a beginning of it.
bool model_allows(const Parts& model, const std::string& result, bool whole) {
  const std::vector<std::string> got = split_parts(result);
  if (got.size() > model.size() || (whole && got.size() != model.size())) return false;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!model[i].count(got[i])) return false;
  }
  return true;
}

std::string describe_model(const Parts& model) {
  std::string out;
  for (const auto& allowed : model) {
    if (!out.empty()) out += ",";
    std::string one;
    for (const auto& a : allowed) one += (one.empty() ? "" : "|") + a;
    out += allowed.size() > 1 ? "{" + one + "}" : one;
  }
  return out;
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
    Parts model;
    bool start_acked = false;                  // a child's start is its parent's business: true from the outset
    std::optional<Duration> first_start_sent;  // when the client first asked to start it
    int signals_acked = 0;
    Outcome outcome;
    bool close_acked = false;  // the client's cancel or terminate
    bool closed = false;
    bool final_query_done = false;  // a query of the closed run answered (or given up on)
    int final_query_tries = 0;
  };
  void fail(const std::string& what) {
    s_.note("FAIL " + what);
    failures_.push_back(what);
  }
  void follow_clock(Duration now) { clock_.set(TimePoint(std::chrono::seconds(1'700'000'000)) + now); }

  void start_workflow(Tracked& w);
  void conflicting_start(Tracked& w);
  void send_signal(Tracked& w, int k, bool retried);
  void close_when_children_run(Tracked& w);
  void send_close(Tracked& w, bool retried);
  void after_start(Tracked& w);
  void query_progress(Tracked& w);
  void query_closed(Tracked& w);
  void check_query_answer(Tracked& w, const std::string& got);
  void check_closed();
  // `ended`: the run is over as the model says it ends (its client did
  // its part); otherwise only what holds at any moment is checked (a run
  // that never closed).
  void check_history(Tracked& w, const v1::History& h, v1::WorkflowExecutionStatus status, bool ended = true);
  // Each workflow task the engine handed a worker in an activity outcome's
  // answer was committed: its WorkflowTaskStarted is in `run_id`'s history,
  // closed once (completed by that worker, or failed or timed out and
  // handed out again).
  void check_eager_workflow_tasks(Tracked& w, const std::string& run_id, const v1::History& h);
  void check_acknowledged_completions(Tracked& w, const std::string& run_id, const v1::History& h);
  void check_open_histories();
  void disk_fault(const DiskFault& fault);
  void aim_crash_at_eager_hand_out();
  void check_replay(Tracked& w, const v1::History& h);
  void check_local_activities(Tracked& w, const v1::History& h);
  void check_patches(Tracked& w, const v1::History& h);
  template <typename Resp>
  std::optional<Resp> direct(std::function<void(Engine&, engine::Reply<Resp>)> invoke);

  SimOptions options_;
  Scheduler s_;
  ManualClock clock_;
  Server server_;
  Network network_;
  std::map<std::string, Tracked> workflows_;
  // What the simulated workers run: the one SDK workflow, as Worker::register_workflow adds it.
  const worker::WorkflowRegistry workflow_types_{
      {generated_wf.name,
       std::make_shared<const worker::WorkflowStarter>(worker::make_starter<&generated>(generated_wf.name))}};
  ActivityLog activity_log_;
  std::vector<std::unique_ptr<SimWorker>> workers_;  // destroyed first: their fibers unwind
  std::vector<std::string> failures_;
  int worker_crashes_ = 0;
  int queries_answered_ = 0;
  int closed_queries_refused_ = 0;
  std::map<std::string, int> kinds_;
  std::set<std::string> children_seen_;  // left-running children a client found running
  bool done_ = false;
  Duration faults_end_{0};
  Duration upgrade_at_{0};  // zero: no code change
};

// The client starts the workflow, or, for some with signals, starts it with
// SignalWithStart carrying signal 0: retried with the same request id
// until acknowledged, which must neither start a second run nor signal twice.
void Simulation::start_workflow(Tracked& w) {
  if (!w.first_start_sent) w.first_start_sent = s_.now();
  v1::StartWorkflowRequest r;
  r.set_workflow_id(w.spec.id);
  r.mutable_workflow_type()->set_name(generated_wf.name);
  r.mutable_task_queue()->set_name("sim");
  *r.mutable_input() = to_payloads(w.spec.steps, Carried{});
  r.set_request_id("start-" + w.spec.id);
  r.mutable_workflow_task_timeout()->set_seconds(10);
  // Eager start, one try in three: the start asks for the first workflow
  // task on behalf of a worker that is up, which runs it from the answer.
  int eager_worker = -1;
  std::string eager_identity;
  if (!w.spec.signal_with_start && s_.chance(0.33)) {
    const int pick = static_cast<int>(s_.random(workers_.size()));
    eager_identity = workers_[pick]->identity();
    if (!eager_identity.empty()) {
      eager_worker = pick;
      r.set_request_eager_execution(true);
      r.set_identity(eager_identity);
    }
  }
  auto answered = [this, &w, eager_worker, eager_identity](Result<v1::StartWorkflowResponse> out) {
    // A retry whose earlier try started the run (its answer lost) may find
    // the run it continued as, which carries the chain's start request id
    // (MutableState::next_run_request): it is the same start, answered
    // with that run and not ALREADY_EXISTS.
    if (out && !out->started() && continues_as_new(w.spec))
      ++kinds_["start retry answered by a later run of its chain"];
    if (!out) {
      if (!transient(out.status())) fail("start " + w.spec.id + ": " + out.status().to_string());
      s_.after(s_.random_duration(100ms, 1s), "retry start", [this, &w] { start_workflow(w); });
      return;
    }
    w.start_acked = true;
    if (eager_worker >= 0 && !out->eager_workflow_task().task_token().empty()) {
      ++kinds_["eager start: first workflow task handed out"];
      workers_[eager_worker]->run_eager_start(eager_identity, out->eager_workflow_task());
    }
    if (w.spec.signal_with_start) w.signals_acked = 1;
    after_start(w);
    if (continues_as_new(w.spec)) {
      s_.after(s_.random_duration(0ms, 20s), "client conflicting start " + w.spec.id,
               [this, &w] { conflicting_start(w); });
    }
  };
  if (!w.spec.signal_with_start) {
    network_.call<v1::StartWorkflowResponse>(
        "start " + w.spec.id,
        [this, r](Engine& e, engine::Reply<v1::StartWorkflowResponse> reply) {
          if (r.request_eager_execution()) aim_crash_at_eager_hand_out();
          e.start_workflow(r, reply);
        },
        10s, answered);
    return;
  }
  v1::SignalWithStartRequest sws;
  *sws.mutable_start() = r;
  sws.set_signal_name(go_signal.name);
  *sws.mutable_signal_input()->add_payloads() = to_payload(signal_payload(w.spec.id, 0));
  network_.call<v1::StartWorkflowResponse>(
      "signal-with-start " + w.spec.id,
      [sws](Engine& e, engine::Reply<v1::StartWorkflowResponse> reply) { e.signal_with_start(sws, reply); }, 10s,
      answered);
}

// Another client starts a workflow of the same id (another request id)
// while its chain of continue-as-new runs is open, or after: it must be
// refused with ALREADY_EXISTS (the reuse policy rejects a duplicate once
// the chain has closed), never start a second chain.
void Simulation::conflicting_start(Tracked& w) {
  if (done_) return;
  v1::StartWorkflowRequest r;
  r.set_workflow_id(w.spec.id);
  r.mutable_workflow_type()->set_name(generated_wf.name);
  r.mutable_task_queue()->set_name("sim");
  *r.mutable_input() = to_payloads(w.spec.steps, Carried{});
  r.set_request_id("other-start-" + w.spec.id);
  r.set_workflow_id_reuse_policy(v1::WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE);
  network_.call<v1::StartWorkflowResponse>(
      "conflicting start " + w.spec.id,
      [r](Engine& e, engine::Reply<v1::StartWorkflowResponse> reply) { e.start_workflow(r, reply); }, 10s,
      [this, &w](Result<v1::StartWorkflowResponse> out) {
        if (out) {
          fail("a second start of " + w.spec.id + " with another request id was answered with run " + out->run_id() +
               (out->started() ? ", started" : ", not started") + "; the model says ALREADY_EXISTS");
          return;
        }
        if (out.status().code() == StatusCode::kAlreadyExists) {
          const bool open = out.status().message().find("is already running") != std::string::npos;
          ++kinds_[open ? "conflicting start refused while the chain runs"
                        : "conflicting start refused after the chain"];
          return;
        }
        if (!transient(out.status())) {
          fail("a second start of " + w.spec.id + ": " + out.status().to_string());
          return;
        }
        s_.after(s_.random_duration(100ms, 1s), "retry conflicting start", [this, &w] { conflicting_start(w); });
      });
}

// Once started: the remaining signals one at a time, then (for a workflow
// that ends waiting for it) the cancel or terminate; queries now and then
// meanwhile.
void Simulation::after_start(Tracked& w) {
  if (w.signals_acked < w.spec.signals) {
    send_signal(w, w.signals_acked, false);
  } else if (closed_by_client(w.spec)) {
    s_.after(s_.random_duration(0ms, 60s), "client close " + w.spec.id, [this, &w] { close_when_children_run(w); });
  }
  s_.after(s_.random_duration(0ms, 60s), "client query " + w.spec.id, [this, &w] { query_progress(w); });
}

// A worker answers a query from the state of the workflow function, which
// must still be running: its answer is the parts it has so far, a
// beginning of the model's result.
void Simulation::check_query_answer(Tracked& w, const std::string& got) {
  if (!got.empty() && !model_allows(w.model, got, false)) {
    fail(w.spec.id + ": query answered '" + got + "', which does not begin the model's result '" +
         describe_model(w.model) + "'");
  }
}

// Refused because the workflow function had returned by the task the worker
// replayed to (WorkflowInstance::query): the state the handler reads ended
// with it.
bool refused_as_returned(const Status& status) {
  return status.code() == StatusCode::kInvalidArgument &&
         status.message().find("has returned: query 'progress' is answered only while") != std::string::npos;
}

// A run that closed before its first workflow task completed has no state to
// query: the worker runs none of its code to make one up.
bool refused_as_never_run(const Status& status) {
  return status.code() == StatusCode::kInvalidArgument &&
         status.message().find("has completed no workflow task: query 'progress'") != std::string::npos;
}

// A query sees the state as of the run's last completed workflow task: the
// parts the workflow has so far, which must begin the model's result.
void Simulation::query_progress(Tracked& w) {
  if (done_ || w.closed) return;
  v1::QueryWorkflowRequest r;
  r.mutable_workflow_execution()->set_workflow_id(w.spec.id);
  r.set_query_type(progress_query.name);
  r.mutable_timeout()->set_seconds(5);
  network_.call<v1::QueryWorkflowResponse>(
      "query " + w.spec.id,
      [r](Engine& e, engine::Reply<v1::QueryWorkflowResponse> reply) { e.query_workflow(r, reply); }, 10s,
      [this, &w](Result<v1::QueryWorkflowResponse> out) {
        if (out) {
          ++queries_answered_;
          check_query_answer(w, decoded(out->result()));
        } else if (!transient(out.status()) && !refused_as_returned(out.status()) &&
                   out.status().message().find("could not read the workflow's history") == std::string::npos &&
                   out.status().message().find("has completed no workflow task") == std::string::npos) {
          // (A worker whose history pages were lost on the network answers
          // with that error; a run terminated before its first workflow task
          // completed has no state for a query to read, as in Temporal.)
          fail("query " + w.spec.id + ": " + out.status().to_string());
        }
        s_.after(s_.random_duration(1s, 60s), "client query " + w.spec.id, [this, &w] { query_progress(w); });
      });
}

// After the run closed (faults are over by then), a query replays its whole
// history, to the end of the workflow function: it must be refused, not
// answered from state that ended with the function.
void Simulation::query_closed(Tracked& w) {
  if (done_) return;
  v1::QueryWorkflowRequest r;
  r.mutable_workflow_execution()->set_workflow_id(w.spec.id);
  r.set_query_type(progress_query.name);
  r.mutable_timeout()->set_seconds(5);
  network_.call<v1::QueryWorkflowResponse>(
      "query closed " + w.spec.id,
      [r](Engine& e, engine::Reply<v1::QueryWorkflowResponse> reply) { e.query_workflow(r, reply); }, 10s,
      [this, &w](Result<v1::QueryWorkflowResponse> out) {
        ++w.final_query_tries;
        // A terminated run's function never returned: its state is as
        // the run left it, a beginning of the model's result.
        if (out && w.spec.ending == WorkflowSpec::Ending::kTerminate) {
          ++queries_answered_;
          check_query_answer(w, decoded(out->result()));
          w.final_query_done = true;
          return;
        }
        if (out) {
          fail(w.spec.id + ": a query after it closed was answered '" + decoded(out->result()) +
               "', from state that ended with the workflow function");
          w.final_query_done = true;
          return;
        }
        if (refused_as_returned(out.status()) || refused_as_never_run(out.status())) {
          ++closed_queries_refused_;
          w.final_query_done = true;
          return;
        }
        if (!transient(out.status()) &&
            out.status().message().find("could not read the workflow's history") == std::string::npos) {
          fail("query of closed " + w.spec.id + ": " + out.status().to_string());
        }
        // Never answered in 20 tries (a crash at the end): not a failure by itself.
        if (w.final_query_tries >= 20) {
          w.final_query_done = true;
          return;
        }
        s_.after(s_.random_duration(1s, 5s), "retry query closed " + w.spec.id, [this, &w] { query_closed(w); });
      });
}

// A client cancels or terminates a run only once the children it leaves
// running run (it describes each until found): their parent-close policy
// is what the model checks, and a child not yet started when its parent
// closes is never started.
void Simulation::close_when_children_run(Tracked& w) {
  if (done_) return;
  for (const std::string& child : left_running_children(w.spec)) {
    if (children_seen_.count(child)) continue;
    v1::DescribeWorkflowRequest d;
    d.mutable_workflow_execution()->set_workflow_id(child);
    network_.call<v1::DescribeWorkflowResponse>(
        "describe " + child,
        [d](Engine& e, engine::Reply<v1::DescribeWorkflowResponse> reply) { e.describe_workflow(d, reply); }, 10s,
        [this, &w, child](Result<v1::DescribeWorkflowResponse> out) {
          if (out) children_seen_.insert(child);
          if (!out && out.status().code() != StatusCode::kNotFound && !transient(out.status())) {
            fail("describe " + child + ": " + out.status().to_string());
          }
          s_.after(s_.random_duration(out ? 0ms : 1s, out ? 100ms : 5s), "client close " + w.spec.id,
                   [this, &w] { close_when_children_run(w); });
        });
    return;
  }
  send_close(w, false);
}

// A cancel or terminate request for a workflow that waits for it, retried
// until acknowledged; a canceled run closes after its cleanup.
void Simulation::send_close(Tracked& w, bool retried) {
  auto answered = [this, &w, retried](const Status& status) {
    // As for a signal: an earlier try was recorded, its answer lost, and
    // the run closed meanwhile. A terminate carries no request id: a copy
    // the network delivered twice finds the run it closed, on any try (the
    // history check still demands the terminated status).
    const bool terminating = w.spec.ending == WorkflowSpec::Ending::kTerminate;
    if (!status.is_ok() && status.code() == StatusCode::kFailedPrecondition && (retried || terminating)) {
      w.close_acked = true;
      return;
    }
    if (!status.is_ok()) {
      if (!transient(status)) fail("close " + w.spec.id + ": " + status.to_string());
      s_.after(s_.random_duration(100ms, 1s), "retry close", [this, &w] { send_close(w, true); });
      return;
    }
    w.close_acked = true;
  };
  if (w.spec.ending == WorkflowSpec::Ending::kTerminate) {
    v1::TerminateWorkflowRequest r;
    r.mutable_workflow_execution()->set_workflow_id(w.spec.id);
    r.set_reason("simulated client");
    network_.call<v1::TerminateWorkflowResponse>(
        "terminate " + w.spec.id,
        [r](Engine& e, engine::Reply<v1::TerminateWorkflowResponse> reply) { e.terminate_workflow(r, reply); }, 10s,
        [answered](Result<v1::TerminateWorkflowResponse> out) { answered(out ? Status::ok() : out.status()); });
    return;
  }
  v1::RequestCancelWorkflowRequest r;
  r.mutable_workflow_execution()->set_workflow_id(w.spec.id);
  r.set_reason("simulated client");
  r.set_request_id("cancel-" + w.spec.id);
  network_.call<v1::RequestCancelWorkflowResponse>(
      "cancel " + w.spec.id,
      [r](Engine& e, engine::Reply<v1::RequestCancelWorkflowResponse> reply) { e.request_cancel_workflow(r, reply); },
      10s, [answered](Result<v1::RequestCancelWorkflowResponse> out) { answered(out ? Status::ok() : out.status()); });
}

void Simulation::send_signal(Tracked& w, int k, bool retried) {
  v1::SignalWorkflowRequest r;
  r.mutable_workflow_execution()->set_workflow_id(w.spec.id);
  r.set_signal_name(go_signal.name);
  *r.mutable_input()->add_payloads() = to_payload(signal_payload(w.spec.id, k));
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
        if (k + 1 < w.spec.signals) {
          send_signal(w, k + 1, false);
        } else if (closed_by_client(w.spec)) {
          s_.after(s_.random_duration(0ms, 30s), "client close " + w.spec.id,
                   [this, &w] { close_when_children_run(w); });
        }
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

void Simulation::check_eager_workflow_tasks(Tracked& w, const std::string& run_id, const v1::History& h) {
  auto handed = activity_log_.eager_workflow_tasks.find(run_id);
  if (handed == activity_log_.eager_workflow_tasks.end()) return;
  std::set<int64_t> started_events;
  std::map<int64_t, int> closes;  // WorkflowTaskStarted event id -> closes
  for (const v1::HistoryEvent& e : h.events()) {
    if (e.has_workflow_task_started()) started_events.insert(e.event_id());
    if (e.has_workflow_task_completed()) ++closes[e.workflow_task_completed().started_event_id()];
    if (e.has_workflow_task_failed()) ++closes[e.workflow_task_failed().started_event_id()];
    if (e.has_workflow_task_timed_out()) ++closes[e.workflow_task_timed_out().started_event_id()];
  }
  for (const int64_t started : handed->second) {
    ++kinds_["eager workflow task run"];
    if (!started_events.contains(started)) {
      fail(w.spec.id + ": eager workflow task started at event " + std::to_string(started) +
           " was handed out, but history has no WorkflowTaskStarted there");
    } else if (closes[started] != 1) {
      fail(w.spec.id + ": eager workflow task started at event " + std::to_string(started) + " closed " +
           std::to_string(closes[started]) + " times, not once");
    }
  }
}

void Simulation::check_history(Tracked& w, const v1::History& h, v1::WorkflowExecutionStatus status, bool ended) {
  const std::string& id = w.spec.id;
  const bool open = !ended;
  const v1::WorkflowExecutionStatus expected_status = w.outcome.status;
  if (!open && status != expected_status) {
    fail(id + " closed with status " + std::to_string(status) + ", the model says " + std::to_string(expected_status));
  }
  std::map<int64_t, std::string> activity_types;  // ActivityTaskScheduled event id -> type
  int cleanups_completed = 0;
  std::vector<std::string> signals;
  int children_up = 0;  // "child-up" signals, one from each child left running
  std::map<int64_t, int> activity_closes, wt_closes;
  std::map<std::string, int> timer_closes;
  std::map<int64_t, int> started_attempt;  // ActivityTaskStarted event id -> its attempt
  std::set<int64_t> wt_scheduled, wt_started;
  // Started event id -> the worker it was handed to. A task is completed by
  // the worker it was handed to: after an engine crash lost a held start,
  // the task is handed out again, and the token from before must be
  // refused, or a worker's result would follow another's start.
  std::map<int64_t, std::string> started_by;
  auto completed_by = [&](int64_t started_event_id, const std::string& identity, const char* what) {
    auto it = started_by.find(started_event_id);
    if (it != started_by.end() && it->second != identity) {
      fail(id + ": " + what + " started at " + std::to_string(started_event_id) + " for " + it->second +
           " was completed by " + identity);
    }
  };
  bool closed = false;
  for (int i = 0; i < h.events_size(); ++i) {
    const v1::HistoryEvent& e = h.events(i);
    if (e.event_id() != i + 1) fail(id + ": event " + std::to_string(i) + " has id " + std::to_string(e.event_id()));
    if (closed) fail(id + ": event " + std::to_string(e.event_id()) + " after the close event");
    if (e.has_workflow_execution_completed()) {
      closed = true;
      const auto& result = e.workflow_execution_completed().result();
      const std::string got = decoded(result);
      if (!model_allows(w.model, got, true))
        fail(id + ": result '" + got + "', the model says '" + describe_model(w.model) + "'");
    }
    if (e.has_workflow_execution_failed() && e.workflow_execution_failed().failure().message().find(
                                                 "the generated workflow fails here") == std::string::npos) {
      fail(id + ": failed with '" + e.workflow_execution_failed().failure().message() +
           "', not where its generated code fails");
    }
    // A child left running is terminated by its parent's close, as its
    // policy says, not by anyone else.
    if (e.has_workflow_execution_terminated() && w.spec.left_running &&
        e.workflow_execution_terminated().reason().find("parent close policy") == std::string::npos) {
      fail(id + ": terminated with '" + e.workflow_execution_terminated().reason() + "', not by its parent's close");
    }
    if (e.has_workflow_execution_failed() || e.has_workflow_execution_timed_out() ||
        e.has_workflow_execution_terminated() || e.has_workflow_execution_canceled() ||
        e.has_workflow_execution_continued_as_new()) {
      closed = true;
    }
    if (e.has_workflow_execution_signaled() && e.workflow_execution_signaled().signal_name() == go_signal.name) {
      const auto& input = e.workflow_execution_signaled().input();
      signals.push_back(decoded(input));
    }
    if (e.has_workflow_execution_signaled() && e.workflow_execution_signaled().signal_name() == child_up_signal.name) {
      ++children_up;
    }
    if (e.has_activity_task_scheduled()) {
      activity_types[e.event_id()] = e.activity_task_scheduled().activity_type().name();
    }
    if (e.has_activity_task_started()) {
      started_attempt[e.event_id()] = e.activity_task_started().attempt();
      started_by[e.event_id()] = e.activity_task_started().identity();
    }
    if (e.has_workflow_task_started()) started_by[e.event_id()] = e.workflow_task_started().identity();
    if (e.has_activity_task_completed()) {
      completed_by(e.activity_task_completed().started_event_id(), e.activity_task_completed().identity(), "activity");
    }
    if (e.has_workflow_task_completed()) {
      completed_by(e.workflow_task_completed().started_event_id(), e.workflow_task_completed().identity(),
                   "workflow task");
    }
    if (e.has_activity_task_completed()) {
      ++activity_closes[e.activity_task_completed().scheduled_event_id()];
      if (activity_types[e.activity_task_completed().scheduled_event_id()] == cleanup_activity.name) {
        ++cleanups_completed;
      }
      // Only the attempt that is running may close it: a late outcome of
      // an attempt that timed out must be refused.
      const auto& result = e.activity_task_completed().result();
      const std::string got = decoded(result);
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
    if (e.has_workflow_task_failed()) {
      ++wt_closes[e.workflow_task_failed().started_event_id()];
      // The workflow is deterministic: a worker that finds it diverged
      // replayed the wrong events or kept the wrong instance.
      if (e.workflow_task_failed().cause() == v1::WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISM) {
        fail(id + ": workflow task started at " + std::to_string(e.workflow_task_failed().started_event_id()) +
             " failed as non-deterministic: " + e.workflow_task_failed().failure().message());
      }
    }
    if (e.has_workflow_task_timed_out() && e.workflow_task_timed_out().started_event_id() != 0) {
      ++wt_closes[e.workflow_task_timed_out().started_event_id()];
    }
  }
  if (!closed && !open) fail(id + ": history has no close event");
  // A canceled workflow ran its cleanup once; no other workflow ran one.
  // A failed one failed where its generated code throws; a terminated one
  // by whom the model says.
  int cleanups_scheduled = 0;
  for (const auto& [event, type] : activity_types) cleanups_scheduled += type == cleanup_activity.name;
  const int cleanups_expected = w.outcome.cleanups;
  if (!open && (cleanups_scheduled != cleanups_expected || cleanups_completed != cleanups_expected)) {
    fail(id + ": cleanup activity scheduled " + std::to_string(cleanups_scheduled) + " and completed " +
         std::to_string(cleanups_completed) + " times, the model says " + std::to_string(cleanups_expected));
  }
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
  // Each child left running told its parent once; a parent closed by its
  // client may have closed before it heard (it waits for the children to
  // run, not for their signal).
  const int left_running = static_cast<int>(left_running_children(w.spec).size());
  if (children_up > left_running || (!open && !closed_by_client(w.spec) && children_up != left_running)) {
    fail(id + ": " + std::to_string(children_up) + " child-up signals recorded from " + std::to_string(left_running) +
         " children left running");
  }
  // A run still open may not have taken every signal yet: a beginning of them.
  std::vector<std::string> expected;
  for (int k = 0; k < w.spec.signals; ++k) expected.push_back(signal_payload(id, k));
  if (open && signals.size() <= expected.size()) expected.resize(signals.size());
  if (signals != expected) {
    std::string got;
    for (const auto& s : signals) got += s + " ";
    fail(id + ": signals recorded [" + got + "], each acknowledged signal must appear exactly once, in order");
  }
}

// The final history, replayed by the SDK's replayer (reprise::testing::replay,
// as a user's CI would run it) through a fresh WorkflowInstance of the same
// workflow, must reproduce every command it recorded: no non-determinism
// between what the workers ran, task by task with their caches, and one
// replay from the start.
void Simulation::check_replay(Tracked& w, const v1::History& h) {
  const uint64_t local_calls = local_activity_calls();
  try {
    testing::replay(h, generated_wf);
  } catch (const std::exception& e) {
    fail(w.spec.id + ": its final history does not replay through the workflow code: " + e.what());
  }
  // A local activity's outcome is its marker's: replay never runs it.
  if (local_activity_calls() != local_calls) {
    fail(w.spec.id + ": replaying its final history ran the local activity " +
         std::to_string(local_activity_calls() - local_calls) + " times instead of reading its marker");
  }
}

// Patches across a code change: a patch step's part is "P<i>" exactly when
// its history records the patch marker "p<i>" (version 2 ran the step
// first), and "O<i>" when version 1 ran it (version 2, replaying that
// history, must keep the old path); a workflow first started after every
// worker runs version 2 takes the new path everywhere. Checked for runs
// that do not continue as new (the final run holds every step's marker).
void Simulation::check_patches(Tracked& w, const v1::History& h) {
  std::set<std::string> markers;
  std::string result;
  for (const v1::HistoryEvent& e : h.events()) {
    if (e.has_marker_recorded() && e.marker_recorded().marker_name() == "patch") {
      auto id = e.marker_recorded().details().find("id");
      if (id != e.marker_recorded().details().end()) markers.insert(decoded(id->second));
    }
    if (e.has_workflow_execution_completed()) result = decoded(e.workflow_execution_completed().result());
  }
  if (continues_as_new(w.spec) || result.empty()) return;
  const std::vector<std::string> parts = split_parts(result);
  const bool after_upgrade = upgrade_at_ > Duration(0) && w.first_start_sent && *w.first_start_sent > upgrade_at_;
  for (size_t i = 0; i < w.spec.steps.size(); ++i) {
    if (w.spec.steps[i].kind != StepKind::kPatch) continue;
    const std::string n = std::to_string(i);
    const bool new_path = std::find(parts.begin(), parts.end(), "P" + n) != parts.end();
    ++kinds_[new_path ? "patch: new path" : "patch: old path"];
    if (new_path != (markers.count("p" + n) > 0)) {
      fail(w.spec.id + ": patch step " + n + " took the " + (new_path ? "new" : "old") + " path, but its history " +
           (new_path ? "has no" : "has the") + " marker p" + n);
    }
    if (after_upgrade && !new_path) {
      fail(w.spec.id + ": started after the upgrade, yet its patch step " + n + " took the old path");
    }
  }
}

// Local activities, at least once: each local step the run got past was
// run to success at least once (more after a crash or a task that went to
// another worker), and recorded by exactly one marker, whose attempts and
// result are those of the run that succeeded: failures + 1 (a run that
// starts again starts from attempt 1).
void Simulation::check_local_activities(Tracked& w, const v1::History& h) {
  const std::string& id = w.spec.id;
  std::vector<size_t> local_steps;
  for (size_t i = 0; i < w.spec.steps.size(); ++i) {
    if (w.spec.steps[i].kind == StepKind::kLocal) local_steps.push_back(i);
  }
  std::vector<const v1::MarkerRecordedEventAttributes*> markers;
  for (const v1::HistoryEvent& e : h.events()) {
    if (e.has_marker_recorded() && e.marker_recorded().marker_name() == "local_activity") {
      markers.push_back(&e.marker_recorded());
    }
  }
  // In order: the final run after a continue-as-new records the last of
  // them; a run canceled or terminated on its way, the first.
  const bool all_ran = w.outcome.status == v1::WORKFLOW_EXECUTION_STATUS_COMPLETED;
  if (markers.size() > local_steps.size() ||
      (all_ran && !continues_as_new(w.spec) && markers.size() != local_steps.size())) {
    fail(id + ": " + std::to_string(markers.size()) + " local activity markers for " +
         std::to_string(local_steps.size()) + " local steps");
    return;
  }
  const size_t first = continues_as_new(w.spec) ? local_steps.size() - markers.size() : 0;
  for (size_t k = 0; k < markers.size(); ++k) {
    const Step& step = w.spec.steps[local_steps[first + k]];
    const auto& details = markers[k]->details();
    int attempts = -1;
    std::string result;
    if (auto it = details.find("attempts"); it != details.end() && it->second.payloads_size() == 1) {
      attempts = from_payload<int>(it->second.payloads(0), "attempts");
    }
    if (auto it = details.find("result"); it != details.end()) result = decoded(it->second);
    const std::string by = result.substr(result.find('@') == std::string::npos ? result.size() : result.find('@') + 1);
    if (attempts != step.fail_times + 1 || by != std::to_string(step.fail_times + 1)) {
      fail(id + ": local step " + std::to_string(local_steps[first + k]) + " recorded after " +
           std::to_string(attempts) + " attempts with '" + result + "', the model says " +
           std::to_string(step.fail_times + 1) + " attempts");
    }
  }
  for (size_t k = 0; k < local_steps.size(); ++k) {
    if (!all_ran && (k < first || k >= first + markers.size())) continue;  // never reached
    const int runs = activity_log_.succeeded[{id, static_cast<int>(local_steps[k])}];
    if (runs < 1) fail(id + ": local step " + std::to_string(local_steps[k]) + " recorded, but never ran to success");
    if (runs > 1) ++kinds_["local activity run again (at least once)"];
  }
}

// While faults are on, one request in five that asks the engine to hand
// out a task in its answer (eager activities, an eager workflow task after
// an activity's outcome, an eager start) gets an engine crash aimed at the
// commit of the batch it goes into: before it (nothing of the transition
// is kept) or after it (kept, never answered). Each hand-out must then be
// run or handed out again, never lost or run twice.
void Simulation::aim_crash_at_eager_hand_out() {
  if (s_.now() >= faults_end_ || !s_.chance(0.2)) return;
  const bool before = s_.chance(0.5);
  server_.arm_commit_fault(before ? FaultPoint::kBeforeCommit : FaultPoint::kAfterCommit, 1);
  ++kinds_[before ? "eager hand-out: engine crash aimed before its commit"
                  : "eager hand-out: engine crash aimed after its commit"];
}

// A fault of the disk under the engine's file (DiskFault in workload.hpp).
void Simulation::disk_fault(const DiskFault& fault) {
  using Kind = DiskFault::Kind;
  using CommitFault = Server::CommitFault;
  Server::Disk& disk = Server::Disk::instance();
  ++kinds_[std::string("disk fault: ") + disk_fault_name(fault.kind)];
  switch (fault.kind) {
    case Kind::kFull:
      disk.set_disk_full(true);
      s_.after(std::chrono::milliseconds(fault.n), "disk has room", [&disk] { disk.set_disk_full(false); });
      break;
    case Kind::kFullAtCommit:
      server_.arm_commit_fault(FaultPoint::kBeforeCommit, fault.n, CommitFault::kDiskFull);
      break;
    case Kind::kFsyncFail:
      disk.fail_next_syncs(fault.n);
      break;
    case Kind::kSlow:
      server_.slow_disk_until(s_.now() + std::chrono::milliseconds(fault.n));
      break;
    case Kind::kPowerLoss:
      server_.lose_power("between jobs");
      break;
    case Kind::kPowerLossBeforeCommit:
      server_.arm_commit_fault(FaultPoint::kBeforeCommit, fault.n, CommitFault::kPowerLoss);
      break;
    case Kind::kPowerLossAfterCommit:
      server_.arm_commit_fault(FaultPoint::kAfterCommit, fault.n, CommitFault::kPowerLoss);
      break;
    case Kind::kPowerLossMidWrite:
      if (server_.up()) disk.cut_power_after(fault.n);
      break;
    case Kind::kCommitAnswerLost:
      server_.arm_commit_fault(FaultPoint::kAfterCommit, fault.n, CommitFault::kAnswerLost);
      break;
  }
}

// Every activity completion the engine acknowledged is in the run's
// history: an ActivityTaskCompleted with the result the worker sent (each
// names its activity and attempt), whatever crashed, lost power or failed
// to commit since.
void Simulation::check_acknowledged_completions(Tracked& w, const std::string& run_id, const v1::History& h) {
  auto acked = activity_log_.completions_acked.find(run_id);
  if (acked == activity_log_.completions_acked.end()) return;
  std::set<std::string> recorded;
  for (const v1::HistoryEvent& e : h.events()) {
    if (e.has_activity_task_completed()) recorded.insert(decoded(e.activity_task_completed().result()));
  }
  for (const std::string& result : acked->second) {
    ++kinds_["activity completions acknowledged and found"];
    if (!recorded.contains(result)) {
      fail(w.spec.id + ": the completion '" + result +
           "' was acknowledged to its worker, but the history has no ActivityTaskCompleted with it");
    }
  }
}

// The runs that never closed: their histories must still be well formed
// (a timer or activity closed at most once, ids gap-free, every task
// completed by whom it was handed to, every acknowledged completion there),
// which often says why they never closed.
void Simulation::check_open_histories() {
  for (auto& [id, w] : workflows_) {
    if (w.closed || !w.start_acked) continue;
    v1::DescribeWorkflowRequest d;
    d.mutable_workflow_execution()->set_workflow_id(id);
    auto described = direct<v1::DescribeWorkflowResponse>(
        [d](Engine& e, engine::Reply<v1::DescribeWorkflowResponse> reply) { e.describe_workflow(d, reply); });
    v1::GetHistoryRequest g;
    g.mutable_workflow_execution()->set_workflow_id(id);
    g.set_maximum_page_size(10000);
    auto history = direct<v1::GetHistoryResponse>(
        [g](Engine& e, engine::Reply<v1::GetHistoryResponse> reply) { e.get_history(g, reply); });
    if (!described || !history) continue;
    check_history(w, history->history(), described->info().status(), false);
    check_acknowledged_completions(w, described->info().execution().run_id(), history->history());
  }
}

void Simulation::check_closed() {
  if (done_) return;
  bool all = true;
  for (auto& [id, w] : workflows_) {
    if (w.closed) continue;
    if (!w.start_acked || w.signals_acked < w.spec.signals || (closed_by_client(w.spec) && !w.close_acked) ||
        !server_.up()) {
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
    check_eager_workflow_tasks(w, described->info().execution().run_id(), history->history());
    check_acknowledged_completions(w, described->info().execution().run_id(), history->history());
    check_replay(w, history->history());
    check_local_activities(w, history->history());
    check_patches(w, history->history());
    if (w.spec.parent.empty()) {
      s_.after(s_.random_duration(0ms, 2s), "client query closed " + id, [this, &w] { query_closed(w); });
    } else {
      w.final_query_done = true;
    }
  }
  for (auto& [id, w] : workflows_) all = all && w.final_query_done;
  if (all) done_ = true;
}

SimResult Simulation::run() {
  s_.print_trace(options_.trace);
  follow_clock(s_.now());
  s_.on_advance([this](Duration now) { follow_clock(now); });
  server_.start();
  const Workload workload = options_.workload ? *options_.workload : generate_workload(options_.seed);
  auto track = [this, &workload](const WorkflowSpec& spec) -> Tracked& {
    for (const Step& step : spec.steps) ++kinds_[kind_name(step.kind)];
    if (spec.signal_with_start) ++kinds_["signal-with-start"];
    if (spec.ending == WorkflowSpec::Ending::kCancel) ++kinds_["ends canceled"];
    if (spec.ending == WorkflowSpec::Ending::kTerminate) ++kinds_["ends terminated"];
    if (spec.ending == WorkflowSpec::Ending::kFail) ++kinds_["ends failed"];
    if (spec.left_running) {
      const char* policies[] = {"terminate", "request-cancel", "abandon"};
      ++kinds_[std::string("child left running, parent-close ") + policies[static_cast<int>(spec.parent_close)]];
    }
    Tracked& w = workflows_[spec.id];
    w.model = model_parts(spec.id, spec.steps, workload.upgrade_at > Duration(0));
    w.outcome = model_outcome(spec);
    w.spec = spec;
    return w;
  };
  for (const WorkflowSpec& spec : workload.workflows) {
    Tracked& w = track(spec);
    s_.after(s_.random_duration(0ms, 5s), "client " + w.spec.id, [this, &w] { start_workflow(w); });
    for (const WorkflowSpec& child : children(spec)) track(child).start_acked = true;
  }
  for (size_t i = 0; i < workload.workers.size(); ++i) {
    workers_.push_back(std::make_unique<SimWorker>(s_, network_, workflow_types_, static_cast<int>(i),
                                                   workload.workers[i], done_, activity_log_, options_.verbose));
    workers_.back()->on_eager_request_delivered = [this] { aim_crash_at_eager_hand_out(); };
    workers_.back()->start();
  }

  // Version 1 of the code until every worker is restarted with version 2.
  upgrade_at_ = workload.upgrade_at;
  set_code_version(upgrade_at_ > Duration(0) ? 1 : 2);
  if (upgrade_at_ > Duration(0)) {
    s_.after(upgrade_at_, "upgrade", [this] {
      s_.note("every worker restarted with version 2 of the code");
      set_code_version(2);
      ++kinds_["upgrade: workers restarted with new code"];
      for (size_t i = 0; i < workers_.size(); ++i) {
        workers_[i]->crash();
        s_.after(s_.random_duration(100ms, 2s), "worker restart", [this, i] { workers_[i]->start(); });
      }
    });
  }

  // Faults in the first minutes; then none, and every workflow must close.
  faults_end_ = workload.faults_end;
  network_.set_faults(true);
  s_.after(faults_end_, "faults end", [this] {
    network_.set_faults(false);
    server_.end_disk_faults();
  });
  for (const DiskFault& fault : workload.disk_faults) {
    s_.after(fault.at, std::string("disk fault ") + disk_fault_name(fault.kind), [this, fault] { disk_fault(fault); });
  }
  for (const EngineCrash& crash : workload.engine_crashes) {
    s_.after(crash.at, "crash", [this, crash] {
      switch (crash.point) {
        case EngineCrash::Point::kBetweenJobs:
          server_.crash("between jobs");
          break;
        case EngineCrash::Point::kBeforeCommit:
          server_.arm_commit_fault(FaultPoint::kBeforeCommit, crash.countdown);
          break;
        case EngineCrash::Point::kAfterCommit:
          server_.arm_commit_fault(FaultPoint::kAfterCommit, crash.countdown);
          break;
      }
    });
  }
  for (const WorkerCrash& crash : workload.worker_crashes) {
    const int index = crash.worker;
    s_.after(crash.at, "worker crash", [this, index] {
      ++worker_crashes_;
      workers_[index]->crash();
      s_.note("worker " + std::to_string(index) + " crashed");
      s_.after(s_.random_duration(100ms, 5s), "worker restart", [this, index] { workers_[index]->start(); });
    });
  }

  // The closure check, every 10 virtual seconds. (The engine's timer loop
  // sleeps and wakes on its own, as in production: sim_runtime.hpp.)
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
    check_open_histories();
  }
  for (auto& f : server_.failures()) failures_.push_back(f);

  SimResult result;
  result.ok = failures_.empty();
  result.failures = failures_;
  result.trace.assign(s_.recent().begin(), s_.recent().end());
  result.trace_hash = s_.trace_hash();
  result.steps = s_.steps();
  result.workflows = static_cast<int>(workflows_.size());
  result.closed_queries_refused = closed_queries_refused_;
  for (const auto& worker : workers_) result.eager_activities += worker->eager_started();
  if (activity_log_.attempts > 0) kinds_["local activity attempts"] = activity_log_.attempts;
  if (activity_log_.cut_by_crash > 0)
    kinds_["local activity attempts cut by a worker crash"] = activity_log_.cut_by_crash;
  if (activity_log_.heartbeat_attempts_resumed > 0) {
    kinds_["heartbeat: attempts resumed from a heartbeat"] = activity_log_.heartbeat_attempts_resumed;
  }
  if (activity_log_.heartbeat_attempts_died > 0) {
    kinds_["heartbeat: first attempts died after their planned heartbeat"] = activity_log_.heartbeat_attempts_died;
  }
  for (const std::string& f : activity_log_.failures) fail(f);
  if (activity_log_.keep_alive_completions > 0) {
    kinds_["local activity keeping its task alive (completions sent)"] = activity_log_.keep_alive_completions;
  }
  if (activity_log_.held_results_answered > 0) {
    kinds_["activity results held with their workflow task, acknowledged by its answer"] =
        activity_log_.held_results_answered;
  }
  if (activity_log_.held_results_reported_again > 0) {
    kinds_["activity results held with their workflow task, reported again after its answer was lost"] =
        activity_log_.held_results_reported_again;
  }
  if (server_.crashes_with_held_starts() > 0) {
    kinds_["engine crashes with task starts held in memory"] = server_.crashes_with_held_starts();
    kinds_["executions whose held task starts a crash lost"] = server_.held_starts_lost();
  }
  auto count = [this](const char* what, int n) {
    if (n > 0) kinds_[what] = n;
  };
  count("disk: power losses", server_.power_losses());
  count("disk: commit batches tried on a full disk", server_.commits_on_full_disk());
  count("disk: commits failed for want of room at COMMIT", server_.commits_failed_full_at_commit());
  count("disk: syncs failed", server_.syncs_failed());
  count("commits kept whose answer was lost", server_.commit_answers_lost());
  count("disk: slow commits", server_.slow_commits());
  result.kinds = kinds_;
  result.engine_crashes = server_.crashes();
  result.worker_crashes = worker_crashes_;
  result.queries_answered = queries_answered_;
  result.virtual_seconds = std::chrono::duration<double>(s_.now()).count();
  return result;
}

}  // namespace

SimResult run_simulation(const SimOptions& options) {
  log::set_level(options.verbose ? log::Level::kInfo : log::Level::kOff);
  reset_side_effect_calls();
  Simulation simulation(options);
  return simulation.run();
}

}  // namespace reprise::sim
