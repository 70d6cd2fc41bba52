// The stackful style against recorded histories: the same commands, replay,
// non-determinism detection, cancellation and failure policy as the
// stackless style, plus what only a stack has: helpers that wait deep in a
// plain call chain, exceptions crossing the switch, unwinding a parked stack
// when the instance goes away, counting the stack in the cache's bytes, and
// an overflow that faults on the guard page.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <stdexcept>
#include <thread>

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

// Five plain calls down, the last one waits on an activity.
std::string level5(StackfulContext& ctx, const std::string& order) {
  return ctx.execute(charge_card, kOptions, order).get();
}
std::string level4(StackfulContext& ctx, const std::string& order) { return level5(ctx, order) + "4"; }
std::string level3(StackfulContext& ctx, const std::string& order) { return level4(ctx, order) + "3"; }
std::string level2(StackfulContext& ctx, const std::string& order) { return level3(ctx, order) + "2"; }
std::string level1(StackfulContext& ctx, const std::string& order) { return level2(ctx, order) + "1"; }

std::string deep(StackfulContext& ctx, std::string order) {
  std::string first = level1(ctx, order);
  ctx.sleep(1h);
  return first + "/" + level1(ctx, order + "-again");
}

// The same shape, but the second charge became a refund.
std::string deep_v2(StackfulContext& ctx, std::string order) {
  std::string first = level1(ctx, order);
  ctx.sleep(1h);
  return first + "/" + ctx.execute(refund_card, kOptions, order).get();
}

// An activity failure caught three calls down; the workflow then throws.
std::string charge_or_explain(StackfulContext& ctx, const std::string& order) {
  try {
    return ctx.execute(charge_card, kOptions, order).get();
  } catch (const ActivityError& e) {
    return std::string("declined: ") + e.what();
  }
}
std::string explained(StackfulContext& ctx, std::string order) {
  std::string outcome = charge_or_explain(ctx, order);
  if (outcome.rfind("declined", 0) == 0) throw ApplicationError("Declined", outcome, true);
  return outcome;
}

int64_t buggy(StackfulContext& ctx) {
  ctx.sleep(1s);
  throw std::out_of_range("index 7 of 3");
}

std::string charge_with_cleanup(StackfulContext& ctx, std::string order) {
  try {
    return ctx.execute(charge_card, kOptions, order).get();
  } catch (const CanceledError&) {
  }
  auto cleanup = ctx.non_cancellable();
  (void)cleanup.execute(refund_card, kOptions, order).get();
  throw CanceledError("checkout canceled after refund");
}

std::string two_branches(StackfulContext& ctx) {
  auto branch = [](std::string order) {
    return [order](StackfulContext& c) {
      // Separate statements: the operands of + may be evaluated in either order.
      std::string charged = c.execute(charge_card, kOptions, order).get();
      return charged + "/" + c.execute(refund_card, kOptions, order).get();
    };
  };
  auto a = ctx.spawn(branch("a"));
  auto b = ctx.spawn(branch("b"));
  return a.get() + " " + b.get();
}

std::string charge_within_a_minute(StackfulContext& ctx, std::string order) {
  auto charged = ctx.execute(charge_card, kOptions, order);
  auto deadline = ctx.timer(1min);
  if (ctx.any(charged, deadline) == 1) {
    charged.cancel();
    return "gave up";
  }
  deadline.cancel();
  return charged.get();
}

inline constexpr Signal<std::string> note{"note"};

// Tells another workflow, then asks it to cancel if it is this run's child.
std::string notify(StackfulContext& ctx, std::string who) {
  ctx.signal_external(who, note, std::string("hello")).get();
  try {
    ctx.cancel_external(ExternalWorkflow(who).child_workflow_only()).get();
  } catch (const ExternalWorkflowError& e) {
    return e.cause();
  }
  return "canceled";
}

// Counts the objects alive on parked stacks.
int alive = 0;
struct OnTheStack {
  OnTheStack() { ++alive; }
  ~OnTheStack() { --alive; }
};
int64_t parks(StackfulContext& ctx) {
  OnTheStack guard;
  std::string big(10'000, 'x');  // heap memory owned by the stack: freed by the unwind
  ctx.sleep(24h);
  return static_cast<int64_t>(big.size());
}

int recurse(int depth) {
  volatile char frame[1024];
  frame[0] = static_cast<char>(depth);
  return depth == 0 ? frame[0] : recurse(depth - 1) + frame[0];
}
int64_t overflows(StackfulContext&) { return recurse(1'000'000); }

template <auto Fn>
worker::WorkflowInstance fresh(const char* name, worker::PanicPolicy panic = worker::PanicPolicy::kFailTask,
                               StackOptions stack = {}) {
  return worker::WorkflowInstance(name, worker::make_starter<Fn>(name, stack), panic);
}

std::string payload_string(const v1::Payloads& p) { return from_payload<std::string>(p.payloads(0), "test"); }

TEST(Stackful, AHelperFiveCallsDownWaitsOnAnActivityAndTheHistoryReplays) {
  Recorder rec(to_payloads(std::string("o")));
  auto live = fresh<&deep>("deep");
  auto first = live.apply(rec.history());
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_EQ(first->commands.size(), 1u);
  EXPECT_EQ(first->commands[0].schedule_activity_task().activity_type().name(), "charge");
  rec.completed(first->commands);
  rec.activity_completed(to_payload(std::string("c1")));
  rec.task();
  auto second = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  ASSERT_EQ(second->commands.size(), 1u);
  EXPECT_TRUE(second->commands[0].has_start_timer());
  rec.completed(second->commands);
  rec.timer_fired();
  rec.task();
  auto third = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(third.is_ok());
  rec.completed(third->commands);
  rec.activity_completed(to_payload(std::string("c2")));
  rec.task();
  auto done = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(done.is_ok()) << done.status().to_string();
  ASSERT_EQ(done->commands.size(), 1u);
  EXPECT_EQ(payload_string(done->commands[0].complete_workflow_execution().result()), "c14321/c24321");
  rec.completed(done->commands);

  // A fresh instance (the cache evicted) replays all of it to the same end.
  auto replayed = fresh<&deep>("deep");
  auto r = replayed.apply(rec.history());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(r->commands.empty());
  EXPECT_TRUE(replayed.finished());
}

TEST(Stackful, SignalsAndCancelRequestsToOtherWorkflowsWaitForTheirOutcomes) {
  Recorder rec(to_payloads(std::string("peer")));
  auto live = fresh<&notify>("notify");
  auto first = live.apply(rec.history());
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_EQ(first->commands.size(), 1u);
  EXPECT_EQ(first->commands[0].signal_external_workflow_execution().execution().workflow_id(), "peer");
  EXPECT_EQ(payload_string(first->commands[0].signal_external_workflow_execution().input()), "hello");
  rec.completed(first->commands);
  rec.external_outcome();
  rec.task();
  auto second = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  ASSERT_EQ(second->commands.size(), 1u);
  EXPECT_TRUE(second->commands[0].request_cancel_external_workflow_execution().child_workflow_only());
  rec.completed(second->commands);
  rec.external_outcome(v1::EXTERNAL_FAILURE_CAUSE_NOT_CHILD);
  rec.task();
  auto done = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(done.is_ok()) << done.status().to_string();
  ASSERT_EQ(done->commands.size(), 1u);
  EXPECT_EQ(payload_string(done->commands[0].complete_workflow_execution().result()), "NOT_CHILD");
  rec.completed(done->commands);

  auto replayed = fresh<&notify>("notify");
  auto r = replayed.apply(rec.history());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(r->commands.empty());
  EXPECT_TRUE(replayed.finished());
}

TEST(Stackful, ChangedCodeIsNonDeterminismNamingTheEvent) {
  Recorder rec(to_payloads(std::string("o")));
  auto live = fresh<&deep>("deep");
  auto first = live.apply(rec.history());
  rec.completed(first->commands);
  rec.activity_completed(to_payload(std::string("c1")));
  rec.task();
  auto second = live.apply(rec.history_from(live.last_event_id() + 1));
  rec.completed(second->commands);
  rec.timer_fired();
  rec.task();
  auto third = live.apply(rec.history_from(live.last_event_id() + 1));
  rec.completed(third->commands);
  rec.task();

  auto changed = fresh<&deep_v2>("deep");
  auto r = changed.apply(rec.history());
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("history has ActivityTaskScheduled 'charge'"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("the workflow code did ScheduleActivityTask 'refund'"), std::string::npos);
}

TEST(Stackful, ExceptionsCrossTheSwitchBothWays) {
  Recorder rec(to_payloads(std::string("o")));
  auto live = fresh<&explained>("explained");
  auto first = live.apply(rec.history());
  rec.completed(first->commands);
  rec.activity_failed("card declined");  // thrown into the fiber, caught three calls down
  rec.task();
  auto r = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->commands.size(), 1u);
  const auto& failure = r->commands[0].fail_workflow_execution().failure();  // thrown out of the fiber
  EXPECT_EQ(failure.type(), "Declined");
  EXPECT_EQ(failure.message(), "declined: activity 'charge' failed: card declined");
}

TEST(Stackful, ABugFollowsThePanicPolicy) {
  Recorder rec(to_payloads());
  auto live = fresh<&buggy>("buggy");
  auto first = live.apply(rec.history());
  rec.completed(first->commands);
  rec.timer_fired();
  rec.task();
  auto blocked = fresh<&buggy>("buggy");
  auto r = blocked.apply(rec.history());
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(), "workflow 'buggy' threw: index 7 of 3");
  auto failing = fresh<&buggy>("buggy", worker::PanicPolicy::kFailWorkflow);
  auto f = failing.apply(rec.history());
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f->commands.at(0).fail_workflow_execution().failure().message(), "index 7 of 3");
}

TEST(Stackful, ACancelReachesTheWaitAndCleanupRunsNonCancellable) {
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
  EXPECT_EQ(second->commands[1].schedule_activity_task().activity_type().name(), "refund");
  rec.completed(second->commands);
  rec.activity_canceled_at(charge_event);
  rec.activity_completed(to_payload(std::string("refunded")));
  rec.task();
  auto third = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(third.is_ok()) << third.status().to_string();
  ASSERT_EQ(third->commands.size(), 1u);
  EXPECT_TRUE(third->commands[0].has_cancel_workflow_execution());
}

TEST(Stackful, BranchesRunOnStacksOfTheirOwnInTheSameOrderOnReplay) {
  Recorder rec(to_payloads());
  auto live = fresh<&two_branches>("branches");
  auto first = live.apply(rec.history());
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_EQ(first->commands.size(), 2u);
  EXPECT_EQ(first->commands[0].schedule_activity_task().activity_id(), "1");
  EXPECT_EQ(first->commands[1].schedule_activity_task().activity_id(), "2");
  rec.completed(first->commands);
  const int64_t a = rec.last_activity() - 1, b = rec.last_activity();
  rec.activity_completed_at(b, to_payload(std::string("b")));
  rec.activity_completed_at(a, to_payload(std::string("a")));
  rec.task();
  auto second = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  ASSERT_EQ(second->commands.size(), 2u);
  rec.completed(second->commands);
  rec.activity_completed_at(rec.last_activity() - 1, to_payload(std::string("rb")));
  rec.activity_completed_at(rec.last_activity(), to_payload(std::string("ra")));
  rec.task();
  auto done = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(done.is_ok()) << done.status().to_string();
  ASSERT_EQ(done->commands.size(), 1u);
  const std::string result = payload_string(done->commands[0].complete_workflow_execution().result());
  rec.completed(done->commands);

  auto replayed = fresh<&two_branches>("branches");
  auto r = replayed.apply(rec.history());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(r->commands.empty());
  EXPECT_TRUE(replayed.finished());
  EXPECT_EQ(result, "a/ra b/rb") << "b's charge completed first, so b scheduled its refund first";
}

TEST(Stackful, ATimerRacesAnActivityAndTheLoserIsCanceled) {
  Recorder rec(to_payloads(std::string("o")));
  auto live = fresh<&charge_within_a_minute>("race");
  auto first = live.apply(rec.history());
  ASSERT_TRUE(first.is_ok());
  ASSERT_EQ(first->commands.size(), 2u);
  rec.completed(first->commands);
  rec.timer_fired();
  rec.task();
  auto r = live.apply(rec.history_from(live.last_event_id() + 1));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->commands.size(), 2u);
  EXPECT_TRUE(r->commands[0].has_request_cancel_activity_task());
  EXPECT_EQ(payload_string(r->commands[1].complete_workflow_execution().result()), "gave up");
}

TEST(Stackful, AParkedStackIsCountedAndUnwoundWhenTheInstanceGoesAway) {
  alive = 0;
  {
    Recorder rec(to_payloads());
    auto instance = fresh<&parks>("parks", worker::PanicPolicy::kFailTask, StackOptions{128 * 1024, true});
    const size_t before = instance.approximate_bytes();
    auto r = instance.apply(rec.history());
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(alive, 1) << "parked on its stack";
    EXPECT_GE(instance.approximate_bytes(), before + 128 * 1024) << "the cache counts the reserved stack";
  }
  EXPECT_EQ(alive, 0) << "evicting the instance destroyed what was on the stack";
}

TEST(Stackful, AWaitInsideACatchBlockKeepsItsExceptionAndLeavesTheThreadsAlone) {
  std::exception_ptr seen_after_resume;
  int uncaught_in_destructor = -1;
  detail::Fiber* self = nullptr;
  detail::Fiber fiber(StackOptions{}, [&] {
    try {
      throw std::runtime_error("declined");
    } catch (const std::runtime_error&) {
      self->suspend();  // parked in the handler, as `catch (...) { cleanup.execute(...).get(); }` is
      seen_after_resume = std::current_exception();
    }
    struct Probe {
      int& out;
      ~Probe() { out = std::uncaught_exceptions(); }
    };
    try {
      Probe probe{uncaught_in_destructor};
      throw std::logic_error("unwinding");
    } catch (const std::logic_error&) {
    }
  });
  self = &fiber;
  ASSERT_FALSE(fiber.resume());
  EXPECT_EQ(std::current_exception(), nullptr) << "the fiber's caught exception leaked into the thread";
  // The fiber resumes on another thread, as after a cache hit on another pool thread.
  std::thread([&] { EXPECT_TRUE(fiber.resume()); }).join();
  ASSERT_NE(seen_after_resume, nullptr);
  try {
    std::rethrow_exception(seen_after_resume);
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "declined");
  }
  EXPECT_EQ(uncaught_in_destructor, 1);
  EXPECT_EQ(fiber.error(), nullptr);
}

TEST(StackfulDeathTest, AStackOverflowFaultsOnTheGuardPage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto overflow = [] {
    Recorder rec(to_payloads());
    auto instance = fresh<&overflows>("overflows", worker::PanicPolicy::kFailTask, StackOptions{32 * 1024, true});
    (void)instance.apply(rec.history());
    std::_Exit(0);  // not reached: the overflow must not go unnoticed
  };
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // A sanitizer catches the fault on the guard page, reports it and exits.
  EXPECT_EXIT(
      overflow(), [](int status) { return WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0); },
      "Sanitizer");
#else
  EXPECT_EXIT(overflow(), testing::KilledBySignal(SIGSEGV), "");
#endif
}

}  // namespace
}  // namespace reprise
