// The replayer's richer features: cancellation and cleanup, canceling timers
// and activities, signal waits with a timeout, requests to other workflows,
// continue-as-new, side effects, patches, spawned branches and the panic
// policy, against histories the real engine wrote for the workflows of
// recorded/workflow_features.hpp (recorded by recorded/workflow_features.cpp).
// Each replays afresh and task by task and must issue exactly the commands
// recorded for each task. The first task of a workflow that changes its mind
// and the 10,000-event history are still built event by event (each says why).
#include "tests/worker/recorded/workflow_features.hpp"

#include <gtest/gtest.h>

#include <tuple>

#include "tests/worker/history_recorder.hpp"
#include "tests/worker/recorded_history.hpp"
#include "worker/workflow_instance.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

using namespace recorded::features;

// Schedules a charge and changes its mind in the same activation.
Workflow<std::string> second_thoughts(WorkflowContext& ctx, std::string order) {
  auto charged = ctx.execute(charge_card, kOptions, order);
  charged.cancel();
  try {
    co_await charged;
  } catch (const CanceledError& e) {
    co_return std::string(e.what());
  }
  co_return "charged";
}

// The coordinator, changed: it cancels before it signals.
Workflow<std::string> coordinator_reordered(WorkflowContext& ctx) {
  co_await ctx.cancel_external({"gone", "r-1"}, "no longer needed");
  co_await ctx.signal_external("counter-7", bump, 5);
  co_return "";
}

Workflow<int64_t> sleeper(WorkflowContext& ctx) {
  int64_t rounds = 0;
  for (; rounds < 2000; ++rounds) co_await ctx.sleep(1s);
  co_return rounds;
}

template <auto Fn>
worker::WorkflowInstance fresh(const char* name, worker::PanicPolicy panic = worker::PanicPolicy::kFailTask) {
  return worker::WorkflowInstance(name, worker::make_starter<Fn>(name), panic);
}

std::string payload_string(const v1::Payloads& p) { return from_payload<std::string>(p.payloads(0), "test"); }

TEST(Cancellation, ACancelRequestCancelsTheActivityAndCleanupRunsInANonCancellableScope) {
  // Recorded: canceled while the charge ran; it reported canceled, the refund completed.
  const v1::History h = recorded::replays_as_recorded(cleanup_wf, "cleanup", "features_cleanup");
  const auto first = recorded::recorded_commands(h, 1);
  ASSERT_EQ(first.size(), 1u);
  const auto second = recorded::recorded_commands(h, 2);
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[0].activity_task_cancel_requested().scheduled_event_id(), first[0].event_id());
  EXPECT_EQ(second[1].activity_task_scheduled().activity_type().name(), "refund")
      << "the cleanup activity is scheduled although the workflow is being canceled";
  EXPECT_TRUE(h.events(h.events_size() - 1).has_workflow_execution_canceled());
}

TEST(Cancellation, CancelingATimerOrAnActivityIssuesItsCommandAndReplays) {
  // The timer fired first: the charge is canceled.
  const v1::History slow = recorded::replays_as_recorded(within_a_minute_wf, "slow", "features_gave_up");
  ASSERT_EQ(recorded::recorded_commands(slow, 1).size(), 2u);
  const auto gave_up = recorded::recorded_commands(slow, 2);
  ASSERT_EQ(gave_up.size(), 2u);
  EXPECT_TRUE(gave_up[0].has_activity_task_cancel_requested());
  EXPECT_EQ(payload_string(gave_up[1].workflow_execution_completed().result()), "gave up");

  // The charge completed first: the timer is canceled.
  const v1::History fast = recorded::replays_as_recorded(within_a_minute_wf, "fast", "features_charged_in_time");
  const auto won = recorded::recorded_commands(fast, 2);
  ASSERT_EQ(won.size(), 2u);
  EXPECT_EQ(won[0].timer_canceled().timer_id(), "1");
  EXPECT_EQ(payload_string(won[1].workflow_execution_completed().result()), "receipt");
  recorded::expect_replays_to_the_end(within_a_minute_wf, fast);
}

// The first task alone, whose three events the engine writes the same way: built by hand.
TEST(Cancellation, WorkCanceledInTheActivationThatIssuedItNeverReachesHistory) {
  Recorder rec(to_payloads(std::string("o")));
  auto live = fresh<&second_thoughts>("checkout");
  auto r = live.apply(rec.history());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->commands.size(), 1u) << "no schedule, no cancel: only the completion";
  EXPECT_EQ(payload_string(r->commands[0].complete_workflow_execution().result()), "activity 'charge' was canceled");
}

TEST(Cancellation, WorkStartedAfterTheRequestIsCanceledWithoutACommand) {
  const v1::History h = recorded::replays_as_recorded(keeps_going_wf, "keeps-going", "features_keeps_going");
  const auto second = recorded::recorded_commands(h, 2);
  ASSERT_EQ(second.size(), 2u) << "the timer's cancel and the completion; no charge";
  EXPECT_TRUE(second[0].has_timer_canceled());
  EXPECT_EQ(payload_string(second[1].workflow_execution_completed().result()), "activity 'charge' was canceled");
}

TEST(Signals, AWaitWithATimeoutGivesTheValueOrNothingAndCancelsTheLoser) {
  const v1::History in_time = recorded::replays_as_recorded(approve_wf, "in-time", "features_approved");
  ASSERT_EQ(recorded::recorded_commands(in_time, 1).size(), 1u);
  const auto approved = recorded::recorded_commands(in_time, 2);
  ASSERT_EQ(approved.size(), 2u);
  EXPECT_TRUE(approved[0].has_timer_canceled());
  EXPECT_EQ(payload_string(approved[1].workflow_execution_completed().result()), "approved by ana");

  const v1::History too_late = recorded::replays_as_recorded(approve_wf, "too-late", "features_timed_out");
  ASSERT_EQ(recorded::recorded_commands(too_late, 2).size(), 1u);
  EXPECT_EQ(recorded::completed_result(too_late), "timed out");
}

TEST(ChildWorkflows, AChildIsStartedWithAStableIdAndItsResultComesBack) {
  // Recorded: square(1) completed, then square(2) failed and failed the parent.
  const v1::History h = recorded::replays_as_recorded(sum_wf, "sums", "features_children");
  const std::string run = h.events(0).workflow_execution_started().original_execution_run_id().substr(0, 8);
  std::vector<std::string> children;
  int64_t first_result = 0;
  for (const auto& e : h.events()) {
    if (e.has_start_child_workflow_execution_initiated()) {
      EXPECT_EQ(e.start_child_workflow_execution_initiated().workflow_type().name(), "square");
      children.push_back(e.start_child_workflow_execution_initiated().workflow_id());
    }
    if (e.has_child_workflow_execution_completed()) {
      EXPECT_EQ(children.size(), 1u) << "the second child starts once the first one's result is back";
      first_result = from_payload<int64_t>(e.child_workflow_execution_completed().result().payloads(0), "result");
    }
  }
  EXPECT_EQ(children, (std::vector<std::string>{"sums/square-1@" + run, "sums/square-2@" + run}));
  EXPECT_EQ(first_result, 1);
  const v1::HistoryEvent& last = h.events(h.events_size() - 1);
  ASSERT_TRUE(last.has_workflow_execution_failed());
  const auto& failure = last.workflow_execution_failed().failure();
  EXPECT_EQ(failure.kind(), v1::FAILURE_KIND_CHILD_WORKFLOW);
  EXPECT_EQ(failure.type(), "Forbidden");
  EXPECT_EQ(failure.message(), "child workflow 'sums/square-2@" + run + "' failed: square of 2 is not allowed");
}

// A child that is canceled, terminated or times out throws ChildWorkflowError
// into its parent, as a failed one does: uncaught, it closes the parent as
// failed (an outcome, not a bug that fails the task), saying how the child ended.
TEST(ChildWorkflows, AChildCanceledTerminatedOrTimedOutThrowsChildWorkflowError) {
  // Recorded: the go-ahead child, waiting, was canceled by a client (it saw
  // the request and closed canceled), terminated, or reached its run timeout.
  const std::vector<std::tuple<std::string, std::string, std::string>> outcomes{
      {"child-canceled", "features_child_canceled", "was canceled"},
      {"child-terminated", "features_child_terminated", "was terminated"},
      {"child-timed-out", "features_child_timed_out", "timed out"},
  };
  for (const auto& [id, name, said] : outcomes) {
    SCOPED_TRACE(name);
    const v1::History h = recorded::replays_as_recorded(go_ahead_parent_wf, id, name);
    std::string child;
    for (const auto& e : h.events()) {
      if (e.has_child_workflow_execution_started())
        child = e.child_workflow_execution_started().workflow_execution().workflow_id();
    }
    const int tasks = recorded::tasks_in(h);
    auto replayed = fresh<&await_go_ahead_child>("await_go_ahead");
    replayed.set_execution(id, h.events(0).workflow_execution_started().original_execution_run_id());
    auto r = replayed.apply(recorded::through_task(h, tasks));
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    ASSERT_EQ(r->commands.size(), 1u);
    ASSERT_TRUE(r->commands[0].has_fail_workflow_execution()) << r->commands[0].DebugString();
    const auto& failure = r->commands[0].fail_workflow_execution().failure();
    EXPECT_EQ(failure.kind(), v1::FAILURE_KIND_CHILD_WORKFLOW);
    EXPECT_EQ(failure.message(), "child workflow '" + child + "' " + said);
  }
}

TEST(ExternalRequests, ASignalAndACancelRequestResolveFromTheirOutcomesAndReplay) {
  // Recorded: a task (woken by a nudge) came between the signal and its
  // outcome; the cancel request's outcome, NOT_FOUND, right after it.
  const v1::History h = recorded::replays_as_recorded(coordinator_wf, "coordinator", "features_coordinator");
  const std::string run_id = h.events(0).workflow_execution_started().original_execution_run_id();
  auto live = fresh<&coordinator>("coordinator");
  live.set_execution("coordinator", run_id);
  auto first = live.apply(recorded::through_task(h, 1));
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_EQ(first->commands.size(), 1u);
  const auto& signal = first->commands[0].signal_external_workflow_execution();
  EXPECT_EQ(first->commands[0].command_type(), v1::COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION);
  EXPECT_EQ(signal.execution().workflow_id(), "counter-7");
  EXPECT_EQ(signal.execution().run_id(), "");
  EXPECT_EQ(signal.signal_name(), "bump");
  EXPECT_FALSE(signal.child_workflow_only());
  EXPECT_EQ(std::get<0>(from_payloads<int64_t>(signal.input(), "input")), 5);

  // The task before the outcome: the future waits on.
  auto waiting = live.apply(recorded::events_after(recorded::through_task(h, 2), live.last_event_id()));
  ASSERT_TRUE(waiting.is_ok()) << waiting.status().to_string();
  EXPECT_TRUE(waiting->commands.empty());

  auto second = live.apply(recorded::events_after(recorded::through_task(h, 3), live.last_event_id()));
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  ASSERT_EQ(second->commands.size(), 1u);
  const auto& cancel = second->commands[0].request_cancel_external_workflow_execution();
  EXPECT_EQ(second->commands[0].command_type(), v1::COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION);
  EXPECT_EQ(cancel.execution().workflow_id(), "gone");
  EXPECT_EQ(cancel.execution().run_id(), "r-1");
  EXPECT_EQ(cancel.reason(), "no longer needed");

  const std::string expected =
      "signaled, cancel request to workflow 'gone' failed: NOT_FOUND (no such workflow, or it is closed) "
      "[NOT_FOUND gone]";
  auto third = live.apply(recorded::events_after(recorded::through_task(h, 4), live.last_event_id()));
  ASSERT_TRUE(third.is_ok()) << third.status().to_string();
  ASSERT_EQ(third->commands.size(), 1u);
  EXPECT_EQ(payload_string(third->commands[0].complete_workflow_execution().result()), expected);
  EXPECT_EQ(recorded::completed_result(h), expected);

  // Code that now sends them in the other order does not match the history.
  auto changed = fresh<&coordinator_reordered>("coordinator");
  auto r = changed.apply(h);
  ASSERT_FALSE(r.is_ok());
  EXPECT_TRUE(r.nondeterministic());
  EXPECT_EQ(r.status().message(),
            "non-determinism at event 5: history has SignalExternalWorkflowExecutionInitiated 'bump' "
            "(workflow id counter-7), the workflow code did RequestCancelExternalWorkflowExecution "
            "(workflow id gone, run id r-1) now");
}

TEST(ExternalRequests, AnUndeliveredSignalThatEscapesFailsTheWorkflowNamingTargetAndCause) {
  // Recorded: "nobody" runs, but is not signal_nobody's child. The replay
  // succeeds: an ExternalWorkflowError is an outcome, not a bug.
  const v1::History h = recorded::replays_as_recorded(signal_nobody_wf, "signal-nobody", "features_signal_not_child");
  const auto first = recorded::recorded_commands(h, 1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(first[0].signal_external_workflow_execution_initiated().child_workflow_only());
  const v1::HistoryEvent& last = h.events(h.events_size() - 1);
  ASSERT_TRUE(last.has_workflow_execution_failed());
  const auto& failure = last.workflow_execution_failed().failure();
  EXPECT_EQ(failure.type(), "NOT_CHILD");
  EXPECT_EQ(failure.message(),
            "signal 'bump' to workflow 'nobody' failed: NOT_CHILD (it is not a child of this workflow)");
}

TEST(ExternalRequests, ARequestInHistoryThatTheCodeNoLongerSendsIsNonDeterminism) {
  const v1::History h = recorded::history("features_signal_not_child");
  auto other = fresh<&with_side_effect>("signal_nobody");  // sleeps instead of signaling
  auto r = other.apply(recorded::through_task(h, 2));
  ASSERT_FALSE(r.is_ok());
  EXPECT_TRUE(r.nondeterministic()) << r.status().to_string();
  EXPECT_NE(r.status().message().find("SignalExternalWorkflowExecutionInitiated 'bump' (workflow id nobody, "
                                      "child only)"),
            std::string::npos)
      << r.status().message();
}

TEST(ExternalRequests, ACanceledWorkflowSendsOnlyThroughANonCancellableContext) {
  const v1::History h = recorded::replays_as_recorded(tell_wf, "tell", "features_tell_partner");
  const auto second = recorded::recorded_commands(h, 2);
  ASSERT_EQ(second.size(), 2u) << "the timer's cancel and the cleanup's cancel request; no signal";
  EXPECT_TRUE(second[0].has_timer_canceled());
  EXPECT_EQ(second[1].request_cancel_external_workflow_execution_initiated().workflow_execution().workflow_id(),
            "partner");
  EXPECT_EQ(recorded::completed_result(h), "signal 'bump' to workflow 'partner' was canceled");
}

TEST(ContinueAsNew, TheRunEndsWithTheNewArgumentsAndTheCodeAfterItNeverRuns) {
  const v1::History h = recorded::replays_as_recorded(counter_wf, "counter", "features_continued");
  auto live = fresh<&counter>("counter");
  auto r = live.apply(recorded::through_task(h, 2));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->commands.size(), 1u);
  const auto& next = r->commands[0].continue_as_new_workflow_execution();
  EXPECT_EQ(next.workflow_type().name(), "counter");
  EXPECT_EQ(std::get<0>(from_payloads<int64_t>(next.input(), "input")), 8);
  EXPECT_TRUE(live.finished());
  recorded::expect_replays_to_the_end(counter_wf, h);
}

TEST(SideEffects, TheValueIsComputedOnceAndReplayedFromHistory) {
  // Not expect_replays_as_recorded: a live first task computes the value
  // anew, which is the point of a side effect.
  const v1::History h = recorded::history("features_side_effect");
  const auto first = recorded::recorded_commands(h, 1);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].marker_recorded().marker_name(), "side_effect");
  side_effect_calls = 0;
  auto replayed = fresh<&with_side_effect>("token");
  auto r = replayed.apply(recorded::through_task(h, 2));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->commands.size(), 1u);
  EXPECT_EQ(payload_string(r->commands[0].complete_workflow_execution().result()), recorded::completed_result(h));
  EXPECT_EQ(recorded::completed_result(h), "token-1") << "computed once, by the recorder";
  EXPECT_EQ(side_effect_calls, 0) << "replay read the recorded value instead of computing again";
}

TEST(Patches, NewExecutionsTakeThePatchAndOldOnesReplayTheOldPath) {
  // An execution that ran v1 up to its charge, replayed by v2: its first
  // task, in history, has no patch marker, so no fee.
  const v1::History old_run = recorded::history("features_fee_v1");
  ASSERT_EQ(recorded::recorded_commands(old_run, 1).size(), 1u);
  auto v2_on_old = fresh<&fee_v2>("fee");
  const auto old_replayed = v2_on_old.apply(recorded::through_task(old_run, 2));
  ASSERT_TRUE(old_replayed.is_ok()) << old_replayed.status().to_string();
  ASSERT_EQ(old_replayed->commands.size(), 1u) << "no fee for the execution that started before the patch";
  EXPECT_EQ(payload_string(old_replayed->commands[0].complete_workflow_execution().result()), "charged o");

  // A new execution on v2 records the patch and charges the fee first.
  const v1::History new_run = recorded::replays_as_recorded(fee_v2_wf, "fee-new", "features_fee_v2");
  const auto first = recorded::recorded_commands(new_run, 1);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].marker_recorded().marker_name(), "patch");
  EXPECT_EQ(payload_string(first[1].activity_task_scheduled().input()), "fee");
  const auto second = recorded::recorded_commands(new_run, 2);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(payload_string(second[0].activity_task_scheduled().input()), "o") << "the order is charged after the fee";
}

TEST(Branches, SpawnedBranchesRunSideBySideInADeterministicOrder) {
  // Recorded: b's charge completed first, then a's, before the next task.
  const v1::History h = recorded::replays_as_recorded(branches_wf, "branches", "features_branches");
  const auto first = recorded::recorded_commands(h, 1);
  ASSERT_EQ(first.size(), 2u) << "both branches charge in the first activation";
  EXPECT_EQ(first[0].activity_task_scheduled().activity_id(), "1");
  EXPECT_EQ(first[1].activity_task_scheduled().activity_id(), "2");
  const auto second = recorded::recorded_commands(h, 2);
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(payload_string(second[0].activity_task_scheduled().input()), "b")
      << "branch b resumed first, as history ordered the completions";
  EXPECT_EQ(recorded::completed_result(h), "A/ra B/rb");
}

TEST(PanicPolicy, ABugFailsTheTaskByDefaultOrTheWorkflowWhenAsked) {
  // Recorded: the second task threw, and the worker failed the task.
  const v1::History second_task = recorded::through_task(recorded::history("features_buggy"), 2);
  auto blocked = fresh<&buggy>("buggy");
  auto r = blocked.apply(second_task);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_EQ(r.status().message(), "workflow 'buggy' threw: index 7 of 3");

  auto failing = fresh<&buggy>("buggy", worker::PanicPolicy::kFailWorkflow);
  auto f = failing.apply(second_task);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  ASSERT_EQ(f->commands.size(), 1u);
  EXPECT_EQ(f->commands[0].fail_workflow_execution().failure().message(), "index 7 of 3");
}

// Built by hand: 2,000 timer rounds through the engine would take far
// longer to record, and megabytes to keep, than the sleeper's shape is worth.
TEST(Replay, ATenThousandEventHistoryReplaysToTheSameEnd) {
  auto live = fresh<&sleeper>("sleeper");
  const Recorder rec = record_sleeper(live, 2000);
  const v1::History history = rec.history();
  ASSERT_GE(history.events_size(), 10'000);
  ASSERT_TRUE(history.events(history.events_size() - 1).has_workflow_execution_completed());
  const v1::Payloads& recorded = history.events(history.events_size() - 1).workflow_execution_completed().result();
  ASSERT_EQ(recorded.payloads_size(), 1);
  EXPECT_EQ(from_payload<int64_t>(recorded.payloads(0), "result"), 2000);
  auto replayed = fresh<&sleeper>("sleeper");
  auto r = replayed.apply(history);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(r->commands.empty());
  EXPECT_TRUE(replayed.finished());

  // Replayed up to its last task, the code must reach the recorded end
  // itself: the same completion, with the same result.
  v1::History up_to_last_task = history;
  up_to_last_task.mutable_events()->DeleteSubrange(history.events_size() - 2, 2);
  ASSERT_TRUE(up_to_last_task.events(up_to_last_task.events_size() - 1).has_workflow_task_started());
  auto again = fresh<&sleeper>("sleeper");
  auto end = again.apply(up_to_last_task);
  ASSERT_TRUE(end.is_ok()) << end.status().to_string();
  ASSERT_EQ(end->commands.size(), 1u);
  ASSERT_TRUE(end->commands[0].has_complete_workflow_execution());
  EXPECT_EQ(end->commands[0].complete_workflow_execution().result().SerializeAsString(), recorded.SerializeAsString());
}

TEST(CacheAccounting, AnInstanceCountsTheCoroutineFramesItHolds) {
  const v1::History h = recorded::history("features_big_frame");
  auto live = fresh<&big_frame>("big_frame");
  const size_t before = live.approximate_bytes();
  auto first = live.apply(recorded::through_task(h, 1));
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_GE(live.approximate_bytes(), before + 100'000) << "the parked frame is counted";
  auto second = live.apply(recorded::events_after(recorded::through_task(h, 2), live.last_event_id()));
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  ASSERT_TRUE(live.finished());
  EXPECT_GE(live.approximate_bytes(), before + 100'000) << "a finished body keeps its frame until the instance goes";
}

}  // namespace
}  // namespace reprise
