// The replayer's richer features against histories built event by event:
// cancellation and cleanup, canceling timers and activities, signal waits
// with a timeout, child workflows, continue-as-new, side effects, patches,
// spawned branches and the panic policy. Each first runs live, then replays
// the recorded history in a fresh instance and must give the same commands.
#include <gtest/gtest.h>

#include <array>
#include <stdexcept>

#include "tests/worker/history_recorder.hpp"
#include "worker/workflow_instance.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

std::string charge(ActivityContext&, std::string order) { return order; }
std::string refund(ActivityContext&, std::string order) { return order; }
inline constexpr Activity<&charge> charge_card{"charge"};
inline constexpr Activity<&refund> refund_card{"refund"};
const auto kOptions = ActivityOptions::start_to_close(1min);

// Charges; when canceled, refunds in a scope that is not canceled, then ends as canceled.
Workflow<std::string> charge_with_cleanup(WorkflowContext& ctx, std::string order) {
  try {
    co_return co_await ctx.execute(charge_card, kOptions, order);
  } catch (const CanceledError&) {
  }
  auto cleanup = ctx.non_cancellable();
  co_await cleanup.execute(refund_card, kOptions, order);
  throw CanceledError("checkout canceled after refund");
}

// Charges, but gives up after a minute and cancels the charge; cancels the
// timer when the charge wins.
Workflow<std::string> charge_within_a_minute(WorkflowContext& ctx, std::string order) {
  auto charged = ctx.execute(charge_card, kOptions, order);
  auto deadline = ctx.sleep(1min);
  if (co_await any(charged, deadline) == 1) {
    charged.cancel();
    co_return "gave up";
  }
  deadline.cancel();
  co_return co_await charged;
}

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

// Catches the cancel, then tries to charge anyway.
Workflow<std::string> keeps_going(WorkflowContext& ctx) {
  try {
    co_await ctx.sleep(1h);
  } catch (const CanceledError&) {
  }
  auto charged = ctx.execute(charge_card, kOptions, std::string("late"));
  try {
    co_await charged;
  } catch (const CanceledError& e) {
    co_return std::string(e.what());
  }
  co_return "charged";
}

inline constexpr Signal<std::string> approval{"approval"};

Workflow<std::string> approve_within_a_day(WorkflowContext& ctx) {
  std::optional<std::string> who = co_await ctx.wait(approval, 24h);
  co_return who ? "approved by " + *who : "timed out";
}

Workflow<int64_t> square(WorkflowContext&, int64_t n) { co_return n* n; }
inline constexpr WorkflowDef<&square> square_wf{"square"};

Workflow<int64_t> sum_of_squares(WorkflowContext& ctx, int64_t n) {
  int64_t sum = 0;
  for (int64_t i = 1; i <= n; ++i) sum += co_await ctx.execute_child(square_wf, ChildWorkflowOptions(), i);
  co_return sum;
}

Workflow<int64_t> counter(WorkflowContext& ctx, int64_t n);
inline constexpr WorkflowDef<&counter> counter_wf{"counter"};
Workflow<int64_t> counter(WorkflowContext& ctx, int64_t n) {
  co_await ctx.sleep(1s);
  if (n < 100) co_await ctx.continue_as_new(counter_wf, n + 1);
  co_return n;
}

int side_effect_calls = 0;
Workflow<std::string> with_side_effect(WorkflowContext& ctx) {
  const std::string token = ctx.side_effect([] { return "token-" + std::to_string(++side_effect_calls); });
  co_await ctx.sleep(1s);
  co_return token;
}

// Version 2 of a workflow: added a fee step behind a patch.
Workflow<std::string> fee_v2(WorkflowContext& ctx, std::string order) {
  if (ctx.patched("add-fee")) co_await ctx.execute(charge_card, kOptions, std::string("fee"));
  co_return co_await ctx.execute(charge_card, kOptions, order);
}
// Version 1, before the patch.
Workflow<std::string> fee_v1(WorkflowContext& ctx, std::string order) {
  co_return co_await ctx.execute(charge_card, kOptions, order);
}

Task<std::string> charge_then_refund(WorkflowContext& ctx, std::string order) {
  std::string charged = co_await ctx.execute(charge_card, kOptions, order);
  co_return charged + "/" + co_await ctx.execute(refund_card, kOptions, order);
}
Workflow<std::string> two_branches(WorkflowContext& ctx) {
  auto a = ctx.spawn(charge_then_refund(ctx, "a"));
  auto b = ctx.spawn(charge_then_refund(ctx, "b"));
  std::string first = co_await a;
  co_return first + " " + co_await b;
}

inline constexpr Signal<int64_t> bump{"bump"};

// Bumps a counter in another workflow, then asks a workflow that is gone to
// cancel; says how each went.
Workflow<std::string> coordinator(WorkflowContext& ctx) {
  co_await ctx.signal_external("counter-7", bump, 5);
  std::string out = "signaled";
  try {
    co_await ctx.cancel_external({"gone", "r-1"}, "no longer needed");
    out += ", canceled";
  } catch (const ExternalWorkflowError& e) {
    out += std::string(", ") + e.what() + " [" + e.cause() + " " + e.workflow_id() + "]";
  }
  co_return out;
}
// The same workflow, changed: it cancels before it signals.
Workflow<std::string> coordinator_reordered(WorkflowContext& ctx) {
  co_await ctx.cancel_external({"gone", "r-1"}, "no longer needed");
  co_await ctx.signal_external("counter-7", bump, 5);
  co_return "";
}

// Signals a workflow that is not there and lets the error escape.
Workflow<int64_t> signal_nobody(WorkflowContext& ctx) {
  co_await ctx.signal_external(ExternalWorkflow("nobody").child_workflow_only(), bump, 1);
  co_return 0;
}

// Being canceled, it still tells a partner, through a non-cancellable
// context; the same request through the canceled context is never sent.
Workflow<std::string> tell_partner_on_cancel(WorkflowContext& ctx) {
  try {
    co_await ctx.sleep(1h);
  } catch (const CanceledError&) {
  }
  std::string out;
  try {
    co_await ctx.signal_external("partner", bump, 1);
  } catch (const CanceledError& e) {
    out = e.what();
  }
  auto cleanup = ctx.non_cancellable();
  co_await cleanup.cancel_external("partner");
  co_return out;
}

Workflow<int64_t> buggy(WorkflowContext& ctx) {
  co_await ctx.sleep(1s);
  throw std::out_of_range("index 7 of 3");
}

Workflow<int64_t> sleeper(WorkflowContext& ctx) {
  int64_t rounds = 0;
  for (; rounds < 2000; ++rounds) co_await ctx.sleep(1s);
  co_return rounds;
}

// Keeps 100 KB of state in its frame while it waits.
Workflow<int64_t> big_frame(WorkflowContext& ctx) {
  std::array<char, 100'000> scratch{};
  scratch[7] = 1;
  co_await ctx.sleep(1s);
  co_return scratch[7];
}

template <auto Fn>
worker::WorkflowInstance fresh(const char* name, worker::PanicPolicy panic = worker::PanicPolicy::kFailTask) {
  return worker::WorkflowInstance(name, worker::make_starter<Fn>(name), panic);
}

std::string payload_string(const v1::Payloads& p) { return from_payload<std::string>(p.payloads(0), "test"); }

// Replays `rec` in a fresh instance and returns the last task's commands.
template <auto Fn>
std::vector<v1::Command> replay(const char* name, const Recorder& rec) {
  auto instance = fresh<Fn>(name);
  instance.set_execution("wf-1", "run-1");
  auto r = instance.apply(rec.history());
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? r->commands : std::vector<v1::Command>{};
}

TEST(Cancellation, ACancelRequestCancelsTheActivityAndCleanupRunsInANonCancellableScope) {
  Recorder rec(to_payloads(std::string("order-1")));
  auto live = fresh<&charge_with_cleanup>("checkout");
  auto first = live.apply(rec.history());
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  rec.completed(first->commands);
  const int64_t charge_event = rec.last_activity();

  rec.cancel_requested();
  rec.task();
  auto second = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  ASSERT_EQ(second->commands.size(), 2u);
  EXPECT_EQ(second->commands[0].request_cancel_activity_task().scheduled_event_id(), charge_event);
  EXPECT_EQ(second->commands[1].schedule_activity_task().activity_type().name(), "refund")
      << "the cleanup activity is scheduled although the workflow is being canceled";
  rec.completed(second->commands);
  rec.activity_canceled_at(charge_event);
  rec.activity_completed(to_payload(std::string("refunded")));
  rec.task();

  auto third = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(third.is_ok()) << third.status().to_string();
  ASSERT_EQ(third->commands.size(), 1u);
  EXPECT_TRUE(third->commands[0].has_cancel_workflow_execution()) << third->commands[0].DebugString();

  const auto replayed = replay<&charge_with_cleanup>("checkout", rec);
  ASSERT_EQ(replayed.size(), 1u);
  EXPECT_TRUE(replayed[0].has_cancel_workflow_execution());
}

TEST(Cancellation, CancelingATimerOrAnActivityIssuesItsCommandAndReplays) {
  // The timer fires first: the charge is canceled.
  Recorder slow(to_payloads(std::string("o")));
  auto live = fresh<&charge_within_a_minute>("checkout");
  auto first = live.apply(slow.history());
  ASSERT_TRUE(first.is_ok());
  ASSERT_EQ(first->commands.size(), 2u);
  slow.completed(first->commands);
  slow.timer_fired();
  slow.task();
  auto gave_up = live.apply(slow.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(gave_up.is_ok()) << gave_up.status().to_string();
  ASSERT_EQ(gave_up->commands.size(), 2u);
  EXPECT_TRUE(gave_up->commands[0].has_request_cancel_activity_task());
  EXPECT_EQ(payload_string(gave_up->commands[1].complete_workflow_execution().result()), "gave up");

  // The charge completes first: the timer is canceled.
  Recorder fast(to_payloads(std::string("o")));
  auto live2 = fresh<&charge_within_a_minute>("checkout");
  auto start = live2.apply(fast.history());
  ASSERT_TRUE(start.is_ok());
  fast.completed(start->commands);
  fast.activity_completed(to_payload(std::string("receipt")));
  fast.task();
  auto won = live2.apply(fast.history_from(live2.last_event_id() + 1));
  ASSERT_TRUE(won.is_ok()) << won.status().to_string();
  ASSERT_EQ(won->commands.size(), 2u);
  EXPECT_EQ(won->commands[0].cancel_timer().timer_id(), "1");
  fast.completed(won->commands);
  const auto replayed = replay<&charge_within_a_minute>("checkout", fast);
  EXPECT_TRUE(replayed.empty()) << "the history ends closed: replay reproduces it and issues nothing new";
}

TEST(Cancellation, WorkCanceledInTheActivationThatIssuedItNeverReachesHistory) {
  Recorder rec(to_payloads(std::string("o")));
  auto live = fresh<&second_thoughts>("checkout");
  auto r = live.apply(rec.history());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->commands.size(), 1u) << "no schedule, no cancel: only the completion";
  EXPECT_EQ(payload_string(r->commands[0].complete_workflow_execution().result()), "activity 'charge' was canceled");
}

TEST(Cancellation, WorkStartedAfterTheRequestIsCanceledWithoutACommand) {
  Recorder rec(to_payloads());
  auto live = fresh<&keeps_going>("keeps_going");
  auto first = live.apply(rec.history());
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  rec.completed(first->commands);
  rec.cancel_requested();
  rec.task();
  auto r = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->commands.size(), 2u) << "the timer's cancel and the completion; no charge";
  EXPECT_TRUE(r->commands[0].has_cancel_timer());
  EXPECT_EQ(payload_string(r->commands[1].complete_workflow_execution().result()), "activity 'charge' was canceled");
}

TEST(Signals, AWaitWithATimeoutGivesTheValueOrNothingAndCancelsTheLoser) {
  Recorder in_time(to_payloads());
  auto live = fresh<&approve_within_a_day>("approve");
  auto first = live.apply(in_time.history());
  ASSERT_TRUE(first.is_ok());
  ASSERT_EQ(first->commands.size(), 1u);
  in_time.completed(first->commands);
  in_time.signaled("approval", to_payload(std::string("ana")));
  in_time.task();
  auto approved = live.apply(in_time.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(approved.is_ok()) << approved.status().to_string();
  ASSERT_EQ(approved->commands.size(), 2u);
  EXPECT_TRUE(approved->commands[0].has_cancel_timer());
  EXPECT_EQ(payload_string(approved->commands[1].complete_workflow_execution().result()), "approved by ana");

  Recorder too_late(to_payloads());
  auto live2 = fresh<&approve_within_a_day>("approve");
  auto start = live2.apply(too_late.history());
  too_late.completed(start->commands);
  too_late.timer_fired();
  too_late.task();
  const auto replayed = replay<&approve_within_a_day>("approve", too_late);
  ASSERT_EQ(replayed.size(), 1u);
  EXPECT_EQ(payload_string(replayed[0].complete_workflow_execution().result()), "timed out");
}

TEST(ChildWorkflows, AChildIsStartedWithAStableIdAndItsResultComesBack) {
  Recorder rec(to_payloads(int64_t{2}));
  auto live = fresh<&sum_of_squares>("sum");
  live.set_execution("sums", "0123456789abcdef");
  auto first = live.apply(rec.history());
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_EQ(first->commands.size(), 1u);
  const auto& start = first->commands[0].start_child_workflow_execution();
  EXPECT_EQ(start.workflow_id(), "sums/square-1@01234567");
  EXPECT_EQ(start.workflow_type().name(), "square");
  rec.completed(first->commands);
  rec.child_started();
  rec.child_completed(to_payload(int64_t{1}));
  rec.task();
  auto second = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  ASSERT_EQ(second->commands.size(), 1u);
  EXPECT_EQ(second->commands[0].start_child_workflow_execution().workflow_id(), "sums/square-2@01234567");
  rec.completed(second->commands);
  rec.child_failed("square of 2 is not allowed", "Forbidden");
  rec.task();

  auto replayed = fresh<&sum_of_squares>("sum");
  replayed.set_execution("sums", "0123456789abcdef");
  auto r = replayed.apply(rec.history());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->commands.size(), 1u);
  const auto& failure = r->commands[0].fail_workflow_execution().failure();
  EXPECT_EQ(failure.kind(), v1::FAILURE_KIND_CHILD_WORKFLOW);
  EXPECT_EQ(failure.type(), "Forbidden");
  EXPECT_EQ(failure.message(), "child workflow 'sums/square-2@01234567' failed: square of 2 is not allowed");
}

// A child that is canceled, terminated or times out throws ChildWorkflowError
// into its parent, as a failed one does: uncaught, it closes the parent as
// failed (an outcome, not a bug that fails the task), saying how the child ended.
TEST(ChildWorkflows, AChildCanceledTerminatedOrTimedOutThrowsChildWorkflowError) {
  const std::vector<std::pair<void (Recorder::*)(), std::string>> outcomes{
      {&Recorder::child_canceled, "was canceled"},
      {&Recorder::child_terminated, "was terminated"},
      {&Recorder::child_timed_out, "timed out"},
  };
  for (const auto& [close, said] : outcomes) {
    SCOPED_TRACE(said);
    Recorder rec(to_payloads(int64_t{1}));
    auto live = fresh<&sum_of_squares>("sum");
    live.set_execution("sums", "0123456789abcdef");
    auto first = live.apply(rec.history());
    ASSERT_TRUE(first.is_ok()) << first.status().to_string();
    rec.completed(first->commands);
    rec.child_started();
    (rec.*close)();
    rec.task();
    auto replayed = fresh<&sum_of_squares>("sum");
    replayed.set_execution("sums", "0123456789abcdef");
    auto r = replayed.apply(rec.history());
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    ASSERT_EQ(r->commands.size(), 1u);
    ASSERT_TRUE(r->commands[0].has_fail_workflow_execution()) << r->commands[0].DebugString();
    const auto& failure = r->commands[0].fail_workflow_execution().failure();
    EXPECT_EQ(failure.kind(), v1::FAILURE_KIND_CHILD_WORKFLOW);
    EXPECT_EQ(failure.message(), "child workflow 'sums/square-1@01234567' " + said);
  }
}
TEST(ExternalRequests, ASignalAndACancelRequestResolveFromTheirOutcomesAndReplay) {
  Recorder rec(to_payloads());
  auto live = fresh<&coordinator>("coordinator");
  auto first = live.apply(rec.history());
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_EQ(first->commands.size(), 1u);
  const auto& signal = first->commands[0].signal_external_workflow_execution();
  EXPECT_EQ(first->commands[0].command_type(), v1::COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION);
  EXPECT_EQ(signal.execution().workflow_id(), "counter-7");
  EXPECT_EQ(signal.execution().run_id(), "");
  EXPECT_EQ(signal.signal_name(), "bump");
  EXPECT_FALSE(signal.child_workflow_only());
  EXPECT_EQ(std::get<0>(from_payloads<int64_t>(signal.input(), "input")), 5);
  rec.completed(first->commands);
  rec.task();  // a task before the outcome (another signal woke it): the future waits on
  auto waiting = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(waiting.is_ok()) << waiting.status().to_string();
  EXPECT_TRUE(waiting->commands.empty());
  rec.completed(waiting->commands);
  rec.external_outcome();
  rec.task();

  auto second = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  ASSERT_EQ(second->commands.size(), 1u);
  const auto& cancel = second->commands[0].request_cancel_external_workflow_execution();
  EXPECT_EQ(second->commands[0].command_type(), v1::COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION);
  EXPECT_EQ(cancel.execution().workflow_id(), "gone");
  EXPECT_EQ(cancel.execution().run_id(), "r-1");
  EXPECT_EQ(cancel.reason(), "no longer needed");
  rec.completed(second->commands);
  rec.external_outcome(v1::EXTERNAL_FAILURE_CAUSE_NOT_FOUND);
  rec.task();

  const std::string expected =
      "signaled, cancel request to workflow 'gone' failed: NOT_FOUND (no such workflow, or it is closed) "
      "[NOT_FOUND gone]";
  auto third = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(third.is_ok()) << third.status().to_string();
  ASSERT_EQ(third->commands.size(), 1u);
  EXPECT_EQ(payload_string(third->commands[0].complete_workflow_execution().result()), expected);

  // A fresh instance replays the recorded history to the same result.
  const auto replayed = replay<&coordinator>("coordinator", rec);
  ASSERT_EQ(replayed.size(), 1u);
  EXPECT_EQ(payload_string(replayed[0].complete_workflow_execution().result()), expected);

  // Code that now sends them in the other order does not match the history.
  auto changed = fresh<&coordinator_reordered>("coordinator");
  auto r = changed.apply(rec.history());
  ASSERT_FALSE(r.is_ok());
  EXPECT_TRUE(r.nondeterministic());
  EXPECT_EQ(r.status().message(),
            "non-determinism at event 5: history has SignalExternalWorkflowExecutionInitiated 'bump' "
            "(workflow id counter-7), the workflow code did RequestCancelExternalWorkflowExecution "
            "(workflow id gone, run id r-1) now");
}

TEST(ExternalRequests, AnUndeliveredSignalThatEscapesFailsTheWorkflowNamingTargetAndCause) {
  Recorder rec(to_payloads());
  auto live = fresh<&signal_nobody>("signal_nobody");
  auto first = live.apply(rec.history());
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_EQ(first->commands.size(), 1u);
  EXPECT_TRUE(first->commands[0].signal_external_workflow_execution().child_workflow_only());
  rec.completed(first->commands);
  rec.external_outcome(v1::EXTERNAL_FAILURE_CAUSE_NOT_CHILD);
  rec.task();
  auto r = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string() << " (an ExternalWorkflowError is an outcome, not a bug)";
  ASSERT_EQ(r->commands.size(), 1u);
  const auto& failure = r->commands[0].fail_workflow_execution().failure();
  EXPECT_EQ(failure.type(), "NOT_CHILD");
  EXPECT_EQ(failure.message(),
            "signal 'bump' to workflow 'nobody' failed: NOT_CHILD (it is not a child of this workflow)");
}

TEST(ExternalRequests, ARequestInHistoryThatTheCodeNoLongerSendsIsNonDeterminism) {
  Recorder rec(to_payloads());
  auto sender = fresh<&signal_nobody>("signal_nobody");
  auto first = sender.apply(rec.history());
  ASSERT_TRUE(first.is_ok());
  rec.completed(first->commands);
  rec.external_outcome();
  rec.task();
  auto other = fresh<&with_side_effect>("signal_nobody");  // sleeps instead of signaling
  auto r = other.apply(rec.history());
  ASSERT_FALSE(r.is_ok());
  EXPECT_TRUE(r.nondeterministic()) << r.status().to_string();
  EXPECT_NE(r.status().message().find("SignalExternalWorkflowExecutionInitiated 'bump' (workflow id nobody, "
                                      "child only)"),
            std::string::npos)
      << r.status().message();
}

TEST(ExternalRequests, ACanceledWorkflowSendsOnlyThroughANonCancellableContext) {
  Recorder rec(to_payloads());
  auto live = fresh<&tell_partner_on_cancel>("tell");
  auto first = live.apply(rec.history());
  ASSERT_TRUE(first.is_ok());
  rec.completed(first->commands);
  rec.cancel_requested();
  rec.task();
  auto r = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->commands.size(), 2u) << "the timer's cancel and the cleanup's cancel request; no signal";
  EXPECT_TRUE(r->commands[0].has_cancel_timer());
  EXPECT_EQ(r->commands[1].request_cancel_external_workflow_execution().execution().workflow_id(), "partner");
  rec.completed(r->commands);
  rec.external_outcome();
  rec.task();
  auto done = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(done.is_ok()) << done.status().to_string();
  ASSERT_EQ(done->commands.size(), 1u);
  EXPECT_EQ(payload_string(done->commands[0].complete_workflow_execution().result()),
            "signal 'bump' to workflow 'partner' was canceled");
}

TEST(ContinueAsNew, TheRunEndsWithTheNewArgumentsAndTheCodeAfterItNeverRuns) {
  Recorder rec(to_payloads(int64_t{7}));
  auto live = fresh<&counter>("counter");
  auto first = live.apply(rec.history());
  rec.completed(first->commands);
  rec.timer_fired();
  rec.task();
  auto r = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->commands.size(), 1u);
  const auto& next = r->commands[0].continue_as_new_workflow_execution();
  EXPECT_EQ(next.workflow_type().name(), "counter");
  EXPECT_EQ(std::get<0>(from_payloads<int64_t>(next.input(), "input")), 8);
  EXPECT_TRUE(live.finished());
  rec.completed(r->commands);
  EXPECT_TRUE(replay<&counter>("counter", rec).empty());
}

TEST(SideEffects, TheValueIsComputedOnceAndReplayedFromHistory) {
  side_effect_calls = 0;
  Recorder rec(to_payloads());
  auto live = fresh<&with_side_effect>("token");
  auto first = live.apply(rec.history());
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_EQ(first->commands.size(), 2u);
  EXPECT_EQ(first->commands[0].record_marker().marker_name(), "side_effect");
  rec.completed(first->commands);
  rec.timer_fired();
  rec.task();
  const auto replayed = replay<&with_side_effect>("token", rec);
  ASSERT_EQ(replayed.size(), 1u);
  EXPECT_EQ(payload_string(replayed[0].complete_workflow_execution().result()), "token-1");
  EXPECT_EQ(side_effect_calls, 1) << "replay read the recorded value instead of computing again";
}

TEST(Patches, NewExecutionsTakeThePatchAndOldOnesReplayTheOldPath) {
  // An execution that ran v1 up to its charge, replayed by v2.
  Recorder old_run(to_payloads(std::string("o")));
  auto v1_live = fresh<&fee_v1>("fee");
  auto v1_first = v1_live.apply(old_run.history());
  old_run.completed(v1_first->commands);
  old_run.activity_completed(to_payload(std::string("charged o")));
  old_run.task();
  const auto old_replayed = replay<&fee_v2>("fee", old_run);
  ASSERT_EQ(old_replayed.size(), 1u) << "no fee for the execution that started before the patch";
  EXPECT_EQ(payload_string(old_replayed[0].complete_workflow_execution().result()), "charged o");

  // A new execution on v2 records the patch and charges the fee first.
  Recorder new_run(to_payloads(std::string("o")));
  auto v2_live = fresh<&fee_v2>("fee");
  auto v2_first = v2_live.apply(new_run.history());
  ASSERT_TRUE(v2_first.is_ok()) << v2_first.status().to_string();
  ASSERT_EQ(v2_first->commands.size(), 2u);
  EXPECT_EQ(v2_first->commands[0].record_marker().marker_name(), "patch");
  EXPECT_EQ(v2_first->commands[1].schedule_activity_task().input().payloads_size(), 1);
  new_run.completed(v2_first->commands);
  new_run.activity_completed(to_payload(std::string("fee")));
  new_run.task();
  const auto new_replayed = replay<&fee_v2>("fee", new_run);
  ASSERT_EQ(new_replayed.size(), 1u);
  EXPECT_TRUE(new_replayed[0].has_schedule_activity_task()) << "the order is charged after the fee";
}

TEST(Branches, SpawnedBranchesRunSideBySideInADeterministicOrder) {
  Recorder rec(to_payloads());
  auto live = fresh<&two_branches>("branches");
  auto first = live.apply(rec.history());
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_EQ(first->commands.size(), 2u) << "both branches charge in the first activation";
  EXPECT_EQ(first->commands[0].schedule_activity_task().activity_id(), "1");
  EXPECT_EQ(first->commands[1].schedule_activity_task().activity_id(), "2");
  rec.completed(first->commands);
  const int64_t charge_b = rec.last_activity();
  rec.activity_completed_at(charge_b, to_payload(std::string("B")));  // b's charge finishes first
  rec.activity_completed_at(charge_b - 1, to_payload(std::string("A")));
  rec.task();
  auto second = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  ASSERT_EQ(second->commands.size(), 2u);
  EXPECT_EQ(second->commands[0].schedule_activity_task().input().DebugString(),
            to_payloads(std::string("b")).DebugString())
      << "branch b resumed first, as history ordered the completions";
  rec.completed(second->commands);
  rec.activity_completed_at(rec.last_activity() - 1, to_payload(std::string("rb")));
  rec.activity_completed_at(rec.last_activity(), to_payload(std::string("ra")));
  rec.task();
  const auto replayed = replay<&two_branches>("branches", rec);
  ASSERT_EQ(replayed.size(), 1u);
  EXPECT_EQ(payload_string(replayed[0].complete_workflow_execution().result()), "A/ra B/rb");
}

TEST(PanicPolicy, ABugFailsTheTaskByDefaultOrTheWorkflowWhenAsked) {
  Recorder rec(to_payloads());
  auto live = fresh<&buggy>("buggy");
  auto first = live.apply(rec.history());
  rec.completed(first->commands);
  rec.timer_fired();
  rec.task();

  auto blocked = fresh<&buggy>("buggy");
  auto r = blocked.apply(rec.history());
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_EQ(r.status().message(), "workflow 'buggy' threw: index 7 of 3");

  auto failing = fresh<&buggy>("buggy", worker::PanicPolicy::kFailWorkflow);
  auto f = failing.apply(rec.history());
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  ASSERT_EQ(f->commands.size(), 1u);
  EXPECT_EQ(f->commands[0].fail_workflow_execution().failure().message(), "index 7 of 3");
}

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
  Recorder rec(to_payloads());
  auto live = fresh<&big_frame>("big_frame");
  const size_t before = live.approximate_bytes();
  auto first = live.apply(rec.history());
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_GE(live.approximate_bytes(), before + 100'000) << "the parked frame is counted";
  rec.completed(first->commands);
  rec.timer_fired();
  rec.task();
  ASSERT_TRUE(live.apply(rec.history_from(live.last_event_id() + 1)).is_ok());
  EXPECT_GE(live.approximate_bytes(), before + 100'000) << "a finished body keeps its frame until the instance goes";
}

}  // namespace
}  // namespace reprise
