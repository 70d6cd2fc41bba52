// The engine "process" of the simulator: a real Engine on a real
// SqliteStore whose writer commits only when the simulator steps it, its
// jobs and deadlines on the Scheduler (SimRuntime); crash() drops
// everything in memory, start() reopens the file. The file sits on a
// simulated disk (tests/store/power_loss_vfs.hpp) that keeps what was not
// synced apart, so a power loss drops it; the disk can also be full, fail
// syncs, or be slow.
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
#include "tests/store/power_loss_vfs.hpp"

namespace reprise::sim {
class Server {
 public:
  using Engine = engine::Engine;
  using FaultPoint = engine::FaultPoint;
  using Disk = engine::testing::PowerLossVfs;
  // What happens at an armed commit point: the process dies there; the
  // machine loses power there (then the process dies); before COMMIT only,
  // the commit fails for want of room and the process goes on; or, after
  // COMMIT only, the commit's answer is lost (a PostgreSQL connection
  // dropped at COMMIT): the batch is kept but fails UNAVAILABLE, and the
  // process goes on.
  enum class CommitFault { kCrash, kPowerLoss, kDiskFull, kAnswerLost };

  // The previous run's stores are closed: the simulated disk forgets their
  // files and faults.
  Server(Scheduler& s, ManualClock& clock, std::string path, uint64_t seed)
      : s_(s), clock_(clock), path_(std::move(path)), seed_(seed) {
    Disk::instance().restore_power();
  }
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
  int power_losses() const { return power_losses_; }
  // Commit batches tried while the disk was full, failed at COMMIT for want
  // of room, and syncs that failed.
  int commits_on_full_disk() const { return commits_on_full_disk_; }
  int commits_failed_full_at_commit() const { return commits_failed_full_at_commit_; }
  int syncs_failed() const { return syncs_failed_; }
  // Batches kept whose COMMIT's answer was lost.
  int commit_answers_lost() const { return commit_answers_lost_; }
  int slow_commits() const { return slow_commits_; }

  void start() {
    engine::StoreOptions options;
    // An acknowledged commit is synced: a power loss keeps it.
    options.durability = engine::Durability::kFull;
    options.vfs = Disk::kName;
    options.read_connections = 2;
    options.quick_check = power_lost_;  // after a power loss the file must still be whole
    options.clock = &clock_;
    options.writer_thread = false;
    options.lock_file = false;  // the crashed store is abandoned, still holding the file
    options.fault_hook = [this](FaultPoint point) { return at_fault_point(point); };
    auto store = engine::SqliteStore::open(path_, options);
    if (!store) {
      Disk& disk = Disk::instance();
      const bool cut_now = disk.power_is_cut();  // a cut planned at a write came while the file was opened
      if (cut_now) {
        disk.restore_power();
        power_lost_ = true;
        ++power_losses_;
      }
      // As a real server on a failing disk: it does not come up until it can.
      if (cut_now || disk.disk_full() || disk.failing_syncs_left() > 0) {
        s_.note("store did not reopen on a failing disk: " + store.status().to_string());
        s_.after(std::chrono::seconds(1), "restart", [this] { start(); });
        return;
      }
      failures_.push_back("store did not reopen: " + store.status().to_string());
      return;
    }
    power_lost_ = false;
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
    Disk& disk = Disk::instance();
    if (disk.power_is_cut()) {
      // Every connection is closed: the disk now holds only what was synced.
      const bool full = disk.disk_full();
      disk.restore_power();
      disk.set_disk_full(full);
      power_lost_ = true;
      ++power_losses_;
    }
    s_.after(s_.random_duration(std::chrono::milliseconds(100), std::chrono::seconds(3)), "restart",
             [this] { start(); });
  }

  // Arms `fault` at the `countdown`th next passage of `point`.
  void arm_commit_fault(FaultPoint point, int countdown, CommitFault fault = CommitFault::kCrash) {
    armed_ = Armed{point, fault};
    countdown_ = countdown;
  }

  // The machine loses power now: what was not synced is gone, and so is the process.
  void lose_power(const std::string& why) {
    if (!up()) return;
    Disk::instance().cut_power_after(0);
    crash("power loss " + why);
  }

  // Commits take 50 ms to 2 s of virtual time until `until`.
  void slow_disk_until(Duration until) { slow_until_ = until; }
  // The faults are over: the disk has room, syncs go through, commits are
  // quick, and a power cut planned at a write is called off.
  void end_disk_faults() {
    Disk::instance().clear_planned_faults();
    slow_until_ = Duration(0);
  }

  // Called after every step: a commit job whenever the writer has work.
  void pump() {
    // A power cut planned at a write (Disk::cut_power_after) came.
    if (up() && Disk::instance().power_is_cut()) crash("power loss in a write");
    if (!up() || commit_posted_ || store_->queued_writes() == 0) return;
    commit_posted_ = true;
    // A short random delay lets batches form, as group commit does; on a
    // slow disk the commit itself takes that long.
    const bool slow = s_.now() < slow_until_;
    slow_commits_ += slow ? 1 : 0;
    const Duration delay = slow ? s_.random_duration(std::chrono::milliseconds(50), std::chrono::seconds(2))
                                : s_.random_duration(std::chrono::milliseconds(0), std::chrono::milliseconds(3));
    s_.after(delay, "commit", [this, inc = incarnation_] {
      if (inc != incarnation_) return;
      commit_posted_ = false;
      if (!up()) return;
      Disk& disk = Disk::instance();
      commits_on_full_disk_ += disk.disk_full() ? 1 : 0;
      const int64_t failing_syncs = disk.failing_syncs_left();
      store_->commit_next_batch();
      syncs_failed_ += static_cast<int>(failing_syncs - disk.failing_syncs_left());
      if (crash_now_) {
        crash(*crash_now_);
      } else if (disk.power_is_cut()) {
        crash("power loss in a write");
      }
    });
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
    if (!armed_ || armed_->point != point || --countdown_ > 0) return Status::ok();
    const CommitFault fault = armed_->fault;
    armed_.reset();
    const std::string where = point == FaultPoint::kBeforeCommit ? "before commit" : "after commit";
    switch (fault) {
      case CommitFault::kDiskFull:
        if (point != FaultPoint::kBeforeCommit) return Status::ok();
        ++commits_failed_full_at_commit_;
        // What SQLite answers when the WAL cannot grow at COMMIT.
        return Status::resource_exhausted("database '" + path_ + "': database or disk is full (simulated, at COMMIT)");
      case CommitFault::kAnswerLost:
        if (point != FaultPoint::kAfterCommit) return Status::ok();
        ++commit_answers_lost_;
        return Status::in_doubt("database '" + path_ +
                                "': the answer to COMMIT was lost (simulated): the batch may have committed");
      case CommitFault::kPowerLoss:
        Disk::instance().cut_power_after(0);
        crash_now_ = "power loss " + where;
        break;
      case CommitFault::kCrash:
        crash_now_ = where;
        break;
    }
    runtime_->kill();  // nothing the engine does with the outcome reaches anyone
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
  struct Armed {
    FaultPoint point;
    CommitFault fault;
  };
  std::optional<Armed> armed_;
  int countdown_ = 0;
  std::optional<std::string> crash_now_;  // the hook stopped the process here (why)
  bool power_lost_ = false;               // the next start follows a power loss
  int power_losses_ = 0;
  int commits_on_full_disk_ = 0;
  int commits_failed_full_at_commit_ = 0;
  int syncs_failed_ = 0;
  int commit_answers_lost_ = 0;
  int slow_commits_ = 0;
  Duration slow_until_{0};
  std::vector<std::string> failures_;
};

}  // namespace reprise::sim
