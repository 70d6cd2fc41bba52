// The engine "process" of the simulator: a real Engine on a real
// SqliteStore whose writer commits only when the simulator steps it, its
// jobs and deadlines on the Scheduler (SimRuntime); crash() drops
// everything in memory, start() reopens the file.
//
// Thread safety: none; the simulator's thread only.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.hpp"
#include "engine/store/sqlite_store.hpp"
#include "reprise/clock.hpp"
#include "scheduler.hpp"
#include "sim_runtime.hpp"

namespace reprise::sim {
class Server {
 public:
  using Engine = engine::Engine;
  using FaultPoint = engine::FaultPoint;

  Server(Scheduler& s, ManualClock& clock, std::string path, uint64_t seed)
      : s_(s), clock_(clock), path_(std::move(path)), seed_(seed) {}
  // The engine still up at the end is abandoned like a crashed one.
  ~Server() {
    if (up()) abandon();
  }

  bool up() const { return engine_ != nullptr; }
  Engine& engine() { return *engine_; }
  int incarnation() const { return incarnation_; }
  int crashes() const { return crashes_; }
  // Crashes that came while task starts were held in memory, and the
  // executions whose held starts they lost.
  int crashes_with_held_starts() const { return crashes_with_held_starts_; }
  int held_starts_lost() const { return held_starts_lost_; }

  void start() {
    engine::StoreOptions options;
    options.durability = engine::Durability::kNormal;  // a process crash keeps what the OS has
    options.read_connections = 2;
    options.quick_check = false;
    options.clock = &clock_;
    options.writer_thread = false;
    options.lock_file = false;  // the crashed store is abandoned, still holding the file
    options.fault_hook = [this](FaultPoint point) { return at_fault_point(point); };
    auto store = engine::SqliteStore::open(path_, options);
    if (!store) {
      failures_.push_back("store did not reopen: " + store.status().to_string());
      return;
    }
    store_ = std::move(store).value();
    ++incarnation_;
    runtime_ = new SimRuntime(s_);  // abandoned with its engine (see abandon())
    engine::EngineOptions eo;
    eo.clock = &clock_;
    eo.poll_timeout = std::chrono::seconds(5);
    eo.max_history_wait = std::chrono::seconds(5);
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
    // What the crash loses of the task starts held in memory.
    if (const size_t held = engine_->held_starts(); held > 0) {
      ++crashes_with_held_starts_;
      held_starts_lost_ += static_cast<int>(held);
    }
    runtime_->kill();
    abandon();
    crash_now_.reset();
    commit_posted_ = false;
    store_.reset();  // fails what was queued; the answers go to the dead runtime
    s_.after(s_.random_duration(std::chrono::milliseconds(100), std::chrono::seconds(3)), "restart",
             [this] { start(); });
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
    s_.after(s_.random_duration(std::chrono::milliseconds(0), std::chrono::milliseconds(3)), "commit",
             [this, inc = incarnation_] {
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
  // An abandoned engine and its runtime are never destroyed, and stay
  // reachable until the process exits so that LeakSanitizer (./run
  // test-asan) does not report them as leaks: they are kept on purpose.
  void abandon() {
    static auto* kept = new std::vector<std::pair<Engine*, SimRuntime*>>();
    kept->emplace_back(engine_, runtime_);
    engine_ = nullptr;
    runtime_ = nullptr;
  }

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
  std::unique_ptr<engine::SqliteStore> store_;
  Engine* engine_ = nullptr;
  SimRuntime* runtime_ = nullptr;
  int incarnation_ = 0;
  int crashes_ = 0;
  int crashes_with_held_starts_ = 0;
  int held_starts_lost_ = 0;
  bool commit_posted_ = false;
  std::optional<FaultPoint> armed_;
  int countdown_ = 0;
  std::optional<FaultPoint> crash_now_;  // the hook stopped the process here
  std::vector<std::string> failures_;
};

}  // namespace reprise::sim
