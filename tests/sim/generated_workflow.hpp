// The workflow every simulated workflow runs: an ordinary SDK workflow
// (reprise::Workflow, replayed by the real WorkflowInstance in the
// simulated workers) whose input is the steps the seed generated. Each step
// adds its part to the result, in order:
//   activity i   "a<i>" once it has succeeded (after its failures, retried);
//   timer i      "t<i>" once it has fired;
//   signal       the value of the next "go" signal;
//   all i        "A<i>": an activity and a spawned branch (a timer, then an
//                activity) joined with all();
//   race i       "R<i>a" or "R<i>t": an activity raced against a timer with
//                any(), whichever resolved first; the loser is canceled;
//   child i      "c<i>(<the child's result, ';' for ','>)": a child workflow
//                running its own generated steps, awaited; or, left
//                running, "C<i>" once the child has told it it runs (its
//                first step signals "child-up" to its parent), so the
//                parent closes while the child runs and the child's
//                parent-close policy decides the child's end;
//   signal-parent nothing: signals "child-up" to the workflow parent_id;
//   local i      "l<i>": a local activity (ctx.execute_local) that fails its
//                first attempts and then succeeds, each attempt taking about
//                `seconds` (0: under a second), so some outlive the
//                workflow task's timeout and keep the task alive;
//   heartbeat i  "h<i>": an activity (progress) that works through
//                `seconds` units, heartbeating the count done after each
//                (3 s heartbeat timeout); its first attempt dies after
//                heartbeat `fail_times` (0: it does not), the heartbeat
//                timeout retries it, and the retry resumes from the last
//                heartbeat's count;
//   deadline i   "x<i>": an activity (stall) whose attempt outlasts its
//                5 s schedule-to-close timeout: the ActivityError of a
//                SCHEDULE_TO_CLOSE timeout is caught;
//   side effect  "s<i>": a side_effect() whose value (a count of calls,
//                different on every call) picks whether a 1 s timer runs,
//                so a replay that computed it again would diverge;
//   patch        a code change: version 1 of the code sleeps 1 s and adds
//                "O<i>"; version 2 asks patched("p<i>") and, taken, adds
//                "P<i>" at once, or else runs version 1's path (a history
//                version 1 recorded the step in replays it);
//   continue     nothing: the run continues as new with the same steps,
//                carrying the parts so far and the index of the next step;
//   await-cancel nothing: waits for a signal nobody sends, so only a cancel
//                (or a terminate) of the workflow ends it;
//   fail         throws ApplicationError("Planned"): the run fails.
// A cancel of the workflow (CanceledError at whatever it awaits) runs the
// "cleanup" activity on a non-cancellable context and then closes the run
// as canceled. The query "progress" answers the parts so far. The reference
// model of the result (simulation.cpp) does not use this code.
#pragma once

#include <string>
#include <vector>

#include "reprise/activity.hpp"
#include "reprise/workflow.hpp"

namespace reprise::sim {

enum class StepKind {
  kActivity,
  kTimer,
  kSignal,
  kAll,
  kRace,
  kChild,
  kAwaitCancel,
  kSideEffect,
  kPatch,
  kContinue,
  kSignalParent,
  kFail,
  kLocal,
  kHeartbeat,
  kScheduleToClose,
};

struct Step {
  StepKind kind = StepKind::kActivity;
  int fail_times = 0;       // activity, all, race, local: attempts that fail before one succeeds; heartbeat: dies after
  int seconds = 0;          // timer, all (the branch's timer), race (the timer it races), local (each attempt);
                            // heartbeat: units of work
  std::string child_id;     // child: its workflow id
  std::vector<Step> child;  // child: its steps
  ChildWorkflowOptions::ParentClose parent_close = ChildWorkflowOptions::ParentClose::kTerminate;  // child
  bool left_running = false;  // child: not awaited; the parent goes on once the child signals it runs
  std::string parent_id;      // signal-parent: whom to signal
  MSGPACK_DEFINE(kind, fail_times, seconds, child_id, child, parent_close, left_running, parent_id);
};

// Fails its first `fail_times` attempts; the result names the attempt that
// succeeded ("<activity id>@<attempt>"), so a history shows whose outcome
// was taken.
std::string flaky(ActivityContext& ctx, int fail_times);
inline constexpr Activity<&flaky> flaky_activity{"flaky"};
// The same function under the name the cancellation cleanup runs it by, so a
// history shows which activity was the cleanup.
inline constexpr Activity<&flaky> cleanup_activity{"cleanup"};

// The local activity: fails its first `fail_times` attempts, like flaky;
// `seconds` and `step` are for the simulated worker, which runs each
// attempt for about `seconds` on the virtual clock and counts the runs of
// step `step`. Every call is counted (local_activity_calls()): a replay
// must use the recorded marker and call it never.
std::string local_flaky(ActivityContext& ctx, int fail_times, int seconds, int step);
inline constexpr Activity<&local_flaky> local_activity{"local-flaky"};
uint64_t local_activity_calls();

// The heartbeating activity: resumes from the count of the previous
// attempt's last heartbeat and heartbeats each unit it finishes, up to
// `units`; the simulated worker times the units and lets the first attempt
// die after heartbeat `dies_after`. Its result, "p<from>-<activity id>@<attempt>",
// names the count it resumed from.
std::string progress(ActivityContext& ctx, int units, int dies_after, int step);
inline constexpr Activity<&progress> progress_activity{"progress"};
// The activity whose attempt runs past its schedule-to-close timeout (the
// simulated worker runs it for 20 s); the result names its attempt.
std::string stall(ActivityContext& ctx, int step);
inline constexpr Activity<&stall> stall_activity{"stall"};

// What a run continued as new starts from: the parts so far and the step
// it goes on with.
struct Carried {
  std::string parts;
  uint32_t next_step = 0;
  MSGPACK_DEFINE(parts, next_step);
};

// The version of the code the workers run (1 or 2; see "patch"), for
// every worker at once: the simulation sets it at its start and when it
// restarts all workers with new code.
void set_code_version(int version);

// The values side effects compute: a count of calls in this process, so
// no two calls give the same. Reset at the start of each simulated run, so
// that a seed runs the same every time (local_activity_calls() too).
void reset_side_effect_calls();

inline constexpr Signal<std::string> go_signal{"go"};
inline constexpr Signal<std::string> never_signal{"never"};        // sent by nobody
inline constexpr Signal<std::string> child_up_signal{"child-up"};  // a left-running child to its parent
inline constexpr Query<std::string> progress_query{"progress"};

Workflow<std::string> generated(WorkflowContext& ctx, std::vector<Step> steps, Carried carried);
inline constexpr WorkflowDef<&generated> generated_wf{"generated"};

}  // namespace reprise::sim

MSGPACK_ADD_ENUM(reprise::sim::StepKind);
MSGPACK_ADD_ENUM(reprise::ChildWorkflowOptions::ParentClose);
