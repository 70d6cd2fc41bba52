#include "workload.hpp"

#include <cctype>
#include <random>
#include <sstream>

namespace reprise::sim {

namespace {

using namespace std::chrono_literals;
using ParentClose = ChildWorkflowOptions::ParentClose;

// The generator's own random stream: the workload of a seed does not
// depend on how the scheduler draws, nor the other way round.
class Draws {
 public:
  explicit Draws(uint64_t seed) : rng_(seed * 0x9E3779B97F4A7C15ull + 0x5157) {}
  uint64_t random(uint64_t bound) { return bound == 0 ? 0 : rng_() % bound; }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  Duration duration(Duration low, Duration high) {
    return low + Duration(static_cast<int64_t>(random(static_cast<uint64_t>((high - low).count()) + 1)));
  }

 private:
  std::mt19937_64 rng_;
};

// A left-running child first waits this long, so its parent closes first.
constexpr int kLeftRunningTimer = 600;

// A step of a top-level workflow; a child's steps are activities, timers,
// all, race, side effects, patches, local, heartbeating and
// schedule-to-close activities only (nobody signals a child).
Step generate_step(Draws& d, bool child) {
  Step step;
  switch (d.random(child ? 9 : 11)) {
    case 0:
      step.kind = StepKind::kActivity;
      step.fail_times = static_cast<int>(d.random(3));
      break;
    case 1:
      step.kind = StepKind::kTimer;
      step.seconds = 1 + static_cast<int>(d.random(30));
      break;
    case 2:
      step.kind = StepKind::kAll;
      step.fail_times = static_cast<int>(d.random(3));
      step.seconds = 1 + static_cast<int>(d.random(10));
      break;
    case 3:
      step.kind = StepKind::kRace;
      step.fail_times = static_cast<int>(d.random(2));
      step.seconds = d.chance(0.5) ? 1 + static_cast<int>(d.random(5)) : kRaceLongTimer;
      break;
    case 4:
      step.kind = StepKind::kSideEffect;
      break;
    case 5:
      step.kind = StepKind::kPatch;
      break;
    case 6:
      // Under a second an attempt (within the workflow task), or 3-9 s,
      // which with its retries may outlive the task's 8 s share of its
      // 10 s timeout and keep it alive.
      step.kind = StepKind::kLocal;
      step.fail_times = static_cast<int>(d.random(3));
      step.seconds = d.chance(0.6) ? 0 : 3 + static_cast<int>(d.random(7));
      break;
    case 7:
      // 3-6 units of work; the first attempt dies after one of them, or not.
      step.kind = StepKind::kHeartbeat;
      step.seconds = 3 + static_cast<int>(d.random(4));
      step.fail_times = d.chance(0.6) ? 1 + static_cast<int>(d.random(step.seconds - 1)) : 0;
      break;
    case 8:
      step.kind = StepKind::kScheduleToClose;
      break;
    case 9:
      step.kind = StepKind::kChild;
      break;
    default:
      step.kind = StepKind::kSignal;
      break;
  }
  return step;
}

Step make_step(StepKind kind) {
  Step step;
  step.kind = kind;
  return step;
}

// A child step's own steps. A left-running child first tells its parent it
// runs, then waits long enough that its parent closes before it goes on.
void generate_child(Draws& d, const std::string& parent_id, int index, Step& step) {
  step.child_id = parent_id + "-c" + std::to_string(index);
  const ParentClose policies[] = {ParentClose::kTerminate, ParentClose::kRequestCancel, ParentClose::kAbandon};
  step.parent_close = policies[d.random(3)];
  if (step.left_running) {
    Step up = make_step(StepKind::kSignalParent);
    up.parent_id = parent_id;
    step.child.push_back(up);
    Step wait = make_step(StepKind::kTimer);
    wait.seconds = kLeftRunningTimer;
    step.child.push_back(wait);
  }
  const int child_steps = 1 + static_cast<int>(d.random(3));
  for (int j = 0; j < child_steps; ++j) step.child.push_back(generate_step(d, true));
}

WorkflowSpec generate_workflow(Draws& d, int index) {
  WorkflowSpec spec;
  spec.id = "wf-" + std::to_string(index);
  // How the run ends: completes (most), fails at its last step, or waits
  // for the client to cancel or terminate it.
  const uint64_t ending = d.random(20);
  spec.ending = ending < 4   ? WorkflowSpec::Ending::kCancel
                : ending < 6 ? WorkflowSpec::Ending::kTerminate
                : ending < 8 ? WorkflowSpec::Ending::kFail
                             : WorkflowSpec::Ending::kComplete;
  const bool waits_for_client =
      spec.ending == WorkflowSpec::Ending::kCancel || spec.ending == WorkflowSpec::Ending::kTerminate;
  const int steps = 1 + static_cast<int>(d.random(5));
  for (int i = 0; i < steps; ++i) {
    Step step = generate_step(d, false);
    if (step.kind == StepKind::kSignal) ++spec.signals;
    if (step.kind == StepKind::kChild) {
      // A parent the client cancels or terminates could be closed on an
      // awaited child; those children are left running, as one in three
      // elsewhere, and their parent-close policy decides their end.
      step.left_running = waits_for_client || d.chance(0.33);
      generate_child(d, spec.id, i, step);
    }
    spec.steps.push_back(step);
  }
  // Continue-as-new once or twice, where nothing can be lost with the old
  // run: a signal that reaches it after its last wait would be (nor does
  // Temporal carry one over), a cancel targets one run, and a child left
  // running would meet its parent-close policy when its parent's run closes.
  bool left_running = false;
  for (const Step& step : spec.steps) left_running = left_running || step.left_running;
  if (spec.ending == WorkflowSpec::Ending::kComplete && spec.signals == 0 && !left_running && d.chance(0.3)) {
    const int continues = 1 + static_cast<int>(d.random(2));
    for (int k = 0; k < continues; ++k) {
      spec.steps.insert(spec.steps.begin() + static_cast<long>(d.random(spec.steps.size() + 1)),
                        make_step(StepKind::kContinue));
    }
  }
  if (waits_for_client) spec.steps.push_back(make_step(StepKind::kAwaitCancel));
  if (spec.ending == WorkflowSpec::Ending::kFail) spec.steps.push_back(make_step(StepKind::kFail));
  spec.signal_with_start = spec.signals > 0 && d.chance(0.5);
  return spec;
}

const char* policy_name(ParentClose policy) {
  switch (policy) {
    case ParentClose::kTerminate:
      return "terminate";
    case ParentClose::kRequestCancel:
      return "request-cancel";
    case ParentClose::kAbandon:
      return "abandon";
  }
  return "?";
}

const char* point_name(EngineCrash::Point point) {
  switch (point) {
    case EngineCrash::Point::kBetweenJobs:
      return "between";
    case EngineCrash::Point::kBeforeCommit:
      return "before-commit";
    case EngineCrash::Point::kAfterCommit:
      return "after-commit";
  }
  return "?";
}

void write_steps(std::ostream& out, const std::vector<Step>& steps) {
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    if (i > 0) out << ' ';
    out << kind_name(step.kind);
    switch (step.kind) {
      case StepKind::kActivity:
        out << '(' << step.fail_times << ')';
        break;
      case StepKind::kTimer:
        out << '(' << step.seconds << ')';
        break;
      case StepKind::kAll:
      case StepKind::kRace:
      case StepKind::kLocal:
      case StepKind::kHeartbeat:
        out << '(' << step.fail_times << ',' << step.seconds << ')';
        break;
      case StepKind::kChild:
        out << '(' << step.child_id << ' ' << policy_name(step.parent_close) << ' '
            << (step.left_running ? "left-running" : "awaited") << " : ";
        write_steps(out, step.child);
        out << ')';
        break;
      case StepKind::kSignalParent:
        out << '(' << step.parent_id << ')';
        break;
      default:
        break;
    }
  }
}

// Reads the step list of a workflow line, or of a child up to its ')'.
class StepParser {
 public:
  explicit StepParser(const std::string& text) : text_(text) {}

  Result<std::vector<Step>> steps(bool nested) {
    std::vector<Step> out;
    while (true) {
      skip_space();
      if (at_end()) {
        if (nested) return error("a child's steps end without ')'");
        return out;
      }
      if (text_[pos_] == ')') {
        if (!nested) return error("')' with no child open");
        ++pos_;
        return out;
      }
      Result<Step> step = one();
      if (!step) return step.status();
      out.push_back(std::move(step).value());
    }
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  void skip_space() {
    while (!at_end() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  Status error(const std::string& what) const {
    return Status::invalid_argument(what + " at column " + std::to_string(pos_ + 1) + " of '" + text_ + "'");
  }
  std::string word() {
    skip_space();
    const size_t from = pos_;
    while (!at_end() && !std::isspace(static_cast<unsigned char>(text_[pos_])) && text_[pos_] != '(' &&
           text_[pos_] != ')' && text_[pos_] != ',') {
      ++pos_;
    }
    return text_.substr(from, pos_ - from);
  }
  bool take(char c) {
    skip_space();
    if (at_end() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  Result<int> number() {
    const std::string w = word();
    if (w.empty() || w.find_first_not_of("0123456789") != std::string::npos) return error("a number expected");
    return std::stoi(w);
  }
  // "(a)" or "(a,b)" after a step's name.
  Status numbers(std::initializer_list<int*> into) {
    if (!take('(')) return error("'(' expected");
    bool first = true;
    for (int* n : into) {
      if (!first && !take(',')) return error("',' expected");
      first = false;
      Result<int> v = number();
      if (!v) return v.status();
      *n = *v;
    }
    if (!take(')')) return error("')' expected");
    return Status::ok();
  }

  Result<Step> one() {
    const std::string name = word();
    Step step;
    static const StepKind kinds[] = {StepKind::kActivity,    StepKind::kTimer,        StepKind::kSignal,
                                     StepKind::kAll,         StepKind::kRace,         StepKind::kChild,
                                     StepKind::kAwaitCancel, StepKind::kSideEffect,   StepKind::kPatch,
                                     StepKind::kContinue,    StepKind::kSignalParent, StepKind::kFail,
                                     StepKind::kLocal,       StepKind::kHeartbeat,    StepKind::kScheduleToClose};
    bool known = false;
    for (StepKind kind : kinds) {
      if (name == kind_name(kind)) step.kind = kind, known = true;
    }
    if (!known) return error("unknown step '" + name + "'");
    switch (step.kind) {
      case StepKind::kActivity:
        REPRISE_RETURN_IF_ERROR(numbers({&step.fail_times}));
        break;
      case StepKind::kTimer:
        REPRISE_RETURN_IF_ERROR(numbers({&step.seconds}));
        break;
      case StepKind::kAll:
      case StepKind::kRace:
      case StepKind::kLocal:
      case StepKind::kHeartbeat:
        REPRISE_RETURN_IF_ERROR(numbers({&step.fail_times, &step.seconds}));
        break;
      case StepKind::kSignalParent:
        if (!take('(')) return error("'(' expected");
        step.parent_id = word();
        if (!take(')')) return error("')' expected");
        break;
      case StepKind::kChild: {
        if (!take('(')) return error("'(' expected");
        step.child_id = word();
        const std::string policy = word();
        const ParentClose policies[] = {ParentClose::kTerminate, ParentClose::kRequestCancel, ParentClose::kAbandon};
        known = false;
        for (ParentClose p : policies) {
          if (policy == policy_name(p)) step.parent_close = p, known = true;
        }
        if (!known) return error("unknown parent-close policy '" + policy + "'");
        const std::string how = word();
        if (how != "awaited" && how != "left-running") return error("'awaited' or 'left-running' expected");
        step.left_running = how == "left-running";
        if (!take(':')) return error("':' expected");
        Result<std::vector<Step>> inner = steps(true);
        if (!inner) return inner.status();
        step.child = std::move(inner).value();
        break;
      }
      default:
        break;
    }
    return step;
  }

  const std::string& text_;
  size_t pos_ = 0;
};

Result<int64_t> parse_number(const std::string& word) {
  if (word.empty() || word.find_first_not_of("0123456789") != std::string::npos) {
    return Status::invalid_argument("'" + word + "' is not a number");
  }
  return std::stoll(word);
}

}  // namespace

const char* kind_name(StepKind kind) {
  switch (kind) {
    case StepKind::kActivity:
      return "activity";
    case StepKind::kTimer:
      return "timer";
    case StepKind::kSignal:
      return "signal";
    case StepKind::kAll:
      return "all+spawn";
    case StepKind::kRace:
      return "any-race";
    case StepKind::kChild:
      return "child";
    case StepKind::kAwaitCancel:
      return "await-cancel";
    case StepKind::kSideEffect:
      return "side-effect";
    case StepKind::kPatch:
      return "patch";
    case StepKind::kContinue:
      return "continue-as-new";
    case StepKind::kSignalParent:
      return "signal-parent";
    case StepKind::kFail:
      return "fail";
    case StepKind::kLocal:
      return "local";
    case StepKind::kHeartbeat:
      return "heartbeat";
    case StepKind::kScheduleToClose:
      return "schedule-to-close";
  }
  return "?";
}

std::vector<WorkflowSpec> children(const WorkflowSpec& parent) {
  std::vector<WorkflowSpec> out;
  for (const Step& step : parent.steps) {
    if (step.kind != StepKind::kChild) continue;
    WorkflowSpec child;
    child.id = step.child_id;
    child.steps = step.child;
    child.parent = parent.id;
    child.left_running = step.left_running;
    child.parent_close = step.parent_close;
    std::vector<WorkflowSpec> theirs = children(child);
    out.push_back(std::move(child));
    for (auto& c : theirs) out.push_back(std::move(c));
  }
  return out;
}

Workload generate_workload(uint64_t seed) {
  Draws d(seed);
  Workload w;
  const int workflow_count = 2 + static_cast<int>(d.random(7));
  for (int i = 0; i < workflow_count; ++i) w.workflows.push_back(generate_workflow(d, i));
  const int worker_count = 1 + static_cast<int>(d.random(3));
  for (int i = 0; i < worker_count; ++i) {
    SimWorker::Shape shape;
    shape.workflow_pollers = 1 + static_cast<int>(d.random(2));
    shape.activity_pollers = 1 + static_cast<int>(d.random(2));
    // Caching off, one instance (every other run replays), or room for all.
    const int cache_sizes[] = {0, 1, 3, 100};
    shape.cache_size = cache_sizes[d.random(4)];
    // The engine's page, or pages of a few events read through GetHistory.
    shape.history_page_events = d.chance(0.5) ? 0 : 2 + static_cast<int>(d.random(8));
    // Half the workers take eager activities: the server starts them in
    // its answer to a workflow task, a path a crash can cut like any other.
    shape.eager_slots = d.chance(0.5) ? 1 + static_cast<int>(d.random(2)) : 0;
    w.workers.push_back(shape);
  }
  // Faults in the first minutes; then none, and every workflow must close.
  w.faults_end = d.duration(30s, 300s);
  const int engine_crashes = static_cast<int>(d.random(4));
  for (int i = 0; i < engine_crashes; ++i) {
    EngineCrash crash;
    crash.at = d.duration(1s, w.faults_end);
    crash.point = d.chance(0.5)   ? EngineCrash::Point::kBetweenJobs
                  : d.chance(0.5) ? EngineCrash::Point::kBeforeCommit
                                  : EngineCrash::Point::kAfterCommit;
    crash.countdown = crash.point == EngineCrash::Point::kBetweenJobs ? 1 : 1 + static_cast<int>(d.random(5));
    w.engine_crashes.push_back(crash);
  }
  // Half the workloads with a patch step deploy new code mid-run.
  bool patches = false;
  for (const WorkflowSpec& spec : w.workflows) {
    for (const Step& step : spec.steps) patches = patches || step.kind == StepKind::kPatch;
    for (const WorkflowSpec& child : children(spec)) {
      for (const Step& step : child.steps) patches = patches || step.kind == StepKind::kPatch;
    }
  }
  if (patches && d.chance(0.5)) w.upgrade_at = d.duration(5s, w.faults_end);
  const int worker_crashes = static_cast<int>(d.random(4));
  for (int i = 0; i < worker_crashes; ++i) {
    WorkerCrash crash;
    crash.worker = static_cast<int>(d.random(w.workers.size()));
    crash.at = d.duration(1s, w.faults_end);
    w.worker_crashes.push_back(crash);
  }
  // Drawn last, so the rest of a seed's workload is what it was before.
  const int disk_faults = static_cast<int>(d.random(4));
  for (int i = 0; i < disk_faults; ++i) {
    DiskFault fault;
    fault.kind = static_cast<DiskFault::Kind>(d.random(8));
    fault.at = d.duration(1s, w.faults_end);
    switch (fault.kind) {
      case DiskFault::Kind::kFull:
        fault.n = 500 + static_cast<int>(d.random(20'000));
        break;
      case DiskFault::Kind::kSlow:
        fault.n = 5'000 + static_cast<int>(d.random(60'000));
        break;
      case DiskFault::Kind::kFsyncFail:
        fault.n = 1 + static_cast<int>(d.random(3));
        break;
      case DiskFault::Kind::kPowerLoss:
        fault.n = 1;
        break;
      case DiskFault::Kind::kPowerLossMidWrite:
        fault.n = 1 + static_cast<int>(d.random(40));
        break;
      case DiskFault::Kind::kFullAtCommit:
      case DiskFault::Kind::kPowerLossBeforeCommit:
      case DiskFault::Kind::kPowerLossAfterCommit:
      case DiskFault::Kind::kCommitAnswerLost:
        fault.n = 1 + static_cast<int>(d.random(5));
        break;
    }
    w.disk_faults.push_back(fault);
  }
  // Drawn after the disk faults, for the same reason.
  const int lost_answers = static_cast<int>(d.random(3));
  for (int i = 0; i < lost_answers; ++i) {
    DiskFault fault;
    fault.kind = DiskFault::Kind::kCommitAnswerLost;
    fault.at = d.duration(1s, w.faults_end);
    fault.n = 1 + static_cast<int>(d.random(5));
    w.disk_faults.push_back(fault);
  }
  return w;
}

const char* disk_fault_name(DiskFault::Kind kind) {
  switch (kind) {
    case DiskFault::Kind::kFull:
      return "full";
    case DiskFault::Kind::kFullAtCommit:
      return "full-at-commit";
    case DiskFault::Kind::kFsyncFail:
      return "fsync-fail";
    case DiskFault::Kind::kSlow:
      return "slow";
    case DiskFault::Kind::kPowerLoss:
      return "power-loss";
    case DiskFault::Kind::kPowerLossBeforeCommit:
      return "power-loss-before-commit";
    case DiskFault::Kind::kPowerLossAfterCommit:
      return "power-loss-after-commit";
    case DiskFault::Kind::kPowerLossMidWrite:
      return "power-loss-mid-write";
    case DiskFault::Kind::kCommitAnswerLost:
      return "commit-answer-lost";
  }
  return "?";
}

std::string to_text(const Workload& w) {
  std::ostringstream out;
  auto ms = [](Duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
  out << "faults-end " << ms(w.faults_end) << '\n';
  for (const auto& s : w.workers) {
    out << "worker " << s.workflow_pollers << ' ' << s.activity_pollers << ' ' << s.cache_size << ' '
        << s.history_page_events << ' ' << s.eager_slots << '\n';
  }
  for (const auto& c : w.engine_crashes) {
    out << "engine-crash " << ms(c.at) << ' ' << point_name(c.point) << ' ' << c.countdown << '\n';
  }
  for (const auto& c : w.worker_crashes) out << "worker-crash " << ms(c.at) << ' ' << c.worker << '\n';
  if (w.upgrade_at > Duration(0)) out << "upgrade " << ms(w.upgrade_at) << '\n';
  for (const auto& f : w.disk_faults)
    out << "disk-fault " << disk_fault_name(f.kind) << ' ' << ms(f.at) << ' ' << f.n << '\n';
  for (const auto& spec : w.workflows) {
    out << "workflow " << spec.id;
    if (spec.ending == WorkflowSpec::Ending::kCancel) out << " cancel";
    if (spec.ending == WorkflowSpec::Ending::kTerminate) out << " terminate";
    if (spec.signal_with_start) out << " signal-with-start";
    out << " : ";
    write_steps(out, spec.steps);
    out << '\n';
  }
  return out.str();
}

Result<Workload> parse_workload(const std::string& text) {
  Workload w;
  std::istringstream lines(text);
  std::string line;
  int line_number = 0;
  while (std::getline(lines, line)) {
    ++line_number;
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string item;
    if (!(words >> item)) continue;
    auto bad = [&](const std::string& why) {
      return Status::invalid_argument("line " + std::to_string(line_number) + ": " + why);
    };
    std::vector<std::string> args;
    if (item != "workflow") {
      for (std::string a; words >> a;) args.push_back(a);
    }
    std::vector<int64_t> n;
    if (item != "workflow") {
      for (size_t i = 0; i < args.size(); ++i) {
        if ((item == "engine-crash" && i == 1) || (item == "disk-fault" && i == 0)) {
          n.push_back(0);
          continue;
        }
        Result<int64_t> v = parse_number(args[i]);
        if (!v) return bad(v.status().message());
        n.push_back(*v);
      }
    }
    if (item == "faults-end" && n.size() == 1) {
      w.faults_end = std::chrono::milliseconds(n[0]);
    } else if (item == "worker" && n.size() == 5) {
      SimWorker::Shape s;
      s.workflow_pollers = static_cast<int>(n[0]);
      s.activity_pollers = static_cast<int>(n[1]);
      s.cache_size = static_cast<int>(n[2]);
      s.history_page_events = static_cast<int>(n[3]);
      s.eager_slots = static_cast<int>(n[4]);
      w.workers.push_back(s);
    } else if (item == "engine-crash" && n.size() == 3) {
      EngineCrash c;
      c.at = std::chrono::milliseconds(n[0]);
      const EngineCrash::Point points[] = {EngineCrash::Point::kBetweenJobs, EngineCrash::Point::kBeforeCommit,
                                           EngineCrash::Point::kAfterCommit};
      bool known = false;
      for (auto p : points) {
        if (args[1] == point_name(p)) c.point = p, known = true;
      }
      if (!known) return bad("unknown crash point '" + args[1] + "'");
      c.countdown = static_cast<int>(n[2]);
      w.engine_crashes.push_back(c);
    } else if (item == "disk-fault" && n.size() == 3) {
      DiskFault f;
      bool known = false;
      for (int k = 0; k <= static_cast<int>(DiskFault::Kind::kCommitAnswerLost); ++k) {
        if (args[0] == disk_fault_name(static_cast<DiskFault::Kind>(k))) {
          f.kind = static_cast<DiskFault::Kind>(k);
          known = true;
        }
      }
      if (!known) return bad("unknown disk fault '" + args[0] + "'");
      f.at = std::chrono::milliseconds(n[1]);
      f.n = static_cast<int>(n[2]);
      w.disk_faults.push_back(f);
    } else if (item == "upgrade" && n.size() == 1) {
      w.upgrade_at = std::chrono::milliseconds(n[0]);
    } else if (item == "worker-crash" && n.size() == 2) {
      w.worker_crashes.push_back({std::chrono::milliseconds(n[0]), static_cast<int>(n[1])});
    } else if (item == "workflow") {
      WorkflowSpec spec;
      if (!(words >> spec.id)) return bad("a workflow needs an id");
      for (std::string flag; words >> flag && flag != ":";) {
        if (flag == "cancel") {
          spec.ending = WorkflowSpec::Ending::kCancel;
        } else if (flag == "terminate") {
          spec.ending = WorkflowSpec::Ending::kTerminate;
        } else if (flag == "signal-with-start") {
          spec.signal_with_start = true;
        } else {
          return bad("unknown workflow flag '" + flag + "'");
        }
      }
      std::string rest;
      std::getline(words, rest);
      Result<std::vector<Step>> steps = StepParser(rest).steps(false);
      if (!steps) return bad(steps.status().message());
      spec.steps = std::move(steps).value();
      for (const Step& step : spec.steps) spec.signals += step.kind == StepKind::kSignal;
      if (!spec.steps.empty() && spec.steps.back().kind == StepKind::kFail) spec.ending = WorkflowSpec::Ending::kFail;
      w.workflows.push_back(std::move(spec));
    } else {
      return bad("cannot read '" + line + "'");
    }
  }
  if (w.workers.empty()) return Status::invalid_argument("the workload has no worker");
  for (const auto& c : w.worker_crashes) {
    if (c.worker < 0 || c.worker >= static_cast<int>(w.workers.size())) {
      return Status::invalid_argument("a worker crash names worker " + std::to_string(c.worker) +
                                      ", which is not there");
    }
  }
  return w;
}

}  // namespace reprise::sim
