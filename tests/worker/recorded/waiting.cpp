// Records waiting_test.cpp's histories, driving the engine by hand so that
// each task carries the events the test is about (both timers fired before
// the task; a timer fired and a signal arrived before the same task; one
// activity failed while the other still ran).
#include "tests/worker/recorded/waiting.hpp"

#include "reprise/codec.hpp"
#include "tests/worker/record_groups.hpp"
#include "tests/worker/recording.hpp"

namespace reprise::recorded {
namespace {

using namespace waiting;

// Starts `def` as `id` on queue "waiting" and runs its first task.
template <auto Fn>
void start_waiting(Recording& r, const WorkflowDef<Fn>& def, const std::string& id) {
  r.start(def, id, "waiting");
  r.workflow_task("waiting");
}

// The first wait loses (`lose`), a task runs, then a signal comes and the
// wait still alive takes it.
template <auto Fn, typename Lose>
void signal_after_a_lost_wait(const std::filesystem::path& dir, const WorkflowDef<Fn>& def, const std::string& id,
                              Lose lose) {
  Recording r(dir);
  start_waiting(r, def, id);
  lose(r);
  require(!completes(r.workflow_task("waiting")), id + ": the second task waits");
  r.client().signal(id, approval, std::string("ana"));
  require(completes(r.workflow_task("waiting")), id + " completes");
  r.save(id, "waiting_" + id);
}

// The timer fires and the signal arrives before the same task.
template <auto Fn>
void signal_tied_with_the_timer(const std::filesystem::path& dir, const WorkflowDef<Fn>& def, const std::string& id) {
  Recording r(dir);
  start_waiting(r, def, id);
  r.fire_timers(id, 1min);
  r.client().signal(id, approval, std::string("ana"));
  require(completes(r.workflow_task("waiting")), id + " completes");
  r.save(id, "waiting_" + id);
}

}  // namespace

void record_waiting(const std::filesystem::path& dir) {
  {
    Recording r(dir);
    start_waiting(r, shared_wf, "shared");
    r.fire_timers("shared", 1min);
    require(completes(r.workflow_task("waiting")), "shared completes");
    r.save("shared", "waiting_shared");
  }
  {
    // Both timers fire before the next task: the second argument's first.
    Recording r(dir);
    start_waiting(r, race_wf, "race");
    r.fire_timers("race", 2min, 2);
    require(completes(r.workflow_task("waiting")), "race completes");
    r.save("race", "waiting_race");
  }
  {
    // The ship fails while the charge still runs; the charge completes later.
    Recording r(dir);
    start_waiting(r, all_wf, "all-ship-fails");
    auto tasks = r.activity_tasks("waiting", 2);
    r.fail(tasks.at("2"), "no such address", "NoSuchAddress");
    require(!completes(r.workflow_task("waiting")), "all() waits for the charge");
    r.complete(tasks.at("1"), to_payload(std::string("receipt")));
    require(completes(r.workflow_task("waiting")), "all-ship-fails completes");
    r.save("all-ship-fails", "waiting_all_ship_fails");
  }
  {
    // Both fail before the next task, the ship first.
    Recording r(dir);
    start_waiting(r, all_wf, "all-both-fail");
    auto tasks = r.activity_tasks("waiting", 2);
    r.fail(tasks.at("2"), "no such address", "NoSuchAddress");
    r.fail(tasks.at("1"), "card declined", "CardDeclined");
    require(completes(r.workflow_task("waiting")), "all-both-fail completes");
    r.save("all-both-fail", "waiting_all_both_fail");
  }
  signal_after_a_lost_wait(dir, any_then_wait_wf, "any-lost", [](Recording& r) { r.fire_timers("any-lost", 1min); });
  signal_after_a_lost_wait(dir, all_then_wait_wf, "all-lost", [](Recording& r) {
    r.fail(r.activity_tasks("waiting", 1).at("1"), "declined", "CardDeclined");
  });
  signal_after_a_lost_wait(dir, timeout_then_wait_wf, "timeout-lost",
                           [](Recording& r) { r.fire_timers("timeout-lost", 1min); });
  signal_tied_with_the_timer(dir, any_then_wait_wf, "any-tied");
  signal_tied_with_the_timer(dir, timeout_then_wait_wf, "timeout-tied");
  {
    Recording r(dir);
    start_waiting(r, handed_on_wf, "handed-on");
    r.fire_timers("handed-on", 1min);
    r.client().signal("handed-on", approval, std::string("ana"));
    require(!completes(r.workflow_task("waiting")), "the branch waits for a second value");
    r.client().signal("handed-on", approval, std::string("bob"));
    require(completes(r.workflow_task("waiting")), "handed-on completes");
    r.save("handed-on", "waiting_handed_on");
  }
}

}  // namespace reprise::recorded
