// The stackful style against histories the real engine wrote for it
// (recorded/stackful.hpp, recorded by recorded/stackful.cpp): the same
// commands, replay, non-determinism detection, cancellation and failure
// policy as the stackless style, plus what only a stack has: helpers that
// wait deep in a plain call chain, exceptions crossing the switch,
// unwinding a parked stack when the instance goes away, counting the stack
// in the cache's bytes, and an overflow that faults on the guard page. Each
// replay goes afresh and task by task (expect_replays_as_recorded).
#include "tests/worker/recorded/stackful.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <stdexcept>
#include <thread>

#include "tests/worker/history_recorder.hpp"
#include "tests/worker/recorded_history.hpp"
#include "worker/workflow_instance.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

using namespace recorded::stackful;

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
  const v1::History h = recorded::replays_as_recorded(deep_wf, "deep", "stackful_deep");
  ASSERT_EQ(recorded::tasks_in(h), 4) << "charge, the timer, charge again, the result";
  const auto first = recorded::recorded_commands(h, 1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].activity_task_scheduled().activity_type().name(), "charge");
  const auto second = recorded::recorded_commands(h, 2);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_TRUE(second[0].has_timer_started());
  EXPECT_EQ(recorded::completed_result(h), "c14321/c24321");
  recorded::expect_replays_to_the_end(deep_wf, h);
}

TEST(Stackful, SignalsAndCancelRequestsToOtherWorkflowsWaitForTheirOutcomes) {
  const v1::History h = recorded::replays_as_recorded(notify_wf, "notify", "stackful_notify");
  const auto first = recorded::recorded_commands(h, 1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].signal_external_workflow_execution_initiated().workflow_execution().workflow_id(), "peer");
  EXPECT_EQ(payload_string(first[0].signal_external_workflow_execution_initiated().input()), "hello");
  const auto second = recorded::recorded_commands(h, 2);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_TRUE(second[0].request_cancel_external_workflow_execution_initiated().child_workflow_only());
  EXPECT_EQ(recorded::completed_result(h), "NOT_CHILD") << "peer is not notify's child";
  recorded::expect_replays_to_the_end(notify_wf, h);
}

TEST(Stackful, ChangedCodeIsNonDeterminismNamingTheEvent) {
  auto changed = fresh<&deep_v2>("deep");
  auto r = changed.apply(recorded::through_task(recorded::history("stackful_deep"), 4));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("history has ActivityTaskScheduled 'charge'"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("the workflow code did ScheduleActivityTask 'refund'"), std::string::npos);
}

TEST(Stackful, ExceptionsCrossTheSwitchBothWays) {
  // The charge failed: thrown into the fiber, caught three calls down...
  const v1::History h = recorded::replays_as_recorded(explained_wf, "explained", "stackful_explained");
  const v1::HistoryEvent& last = h.events(h.events_size() - 1);
  ASSERT_TRUE(last.has_workflow_execution_failed());
  const auto& failure = last.workflow_execution_failed().failure();  // ...then thrown out of the fiber
  EXPECT_EQ(failure.type(), "Declined");
  EXPECT_EQ(failure.message(), "declined: activity 'charge' failed: card declined");
}

TEST(Stackful, ABugFollowsThePanicPolicy) {
  // Recorded: the second task threw, and the worker failed the task.
  const v1::History h = recorded::history("stackful_buggy");
  const v1::History second_task = recorded::through_task(h, 2);
  bool task_failed = false;
  for (const auto& e : h.events()) task_failed = task_failed || e.has_workflow_task_failed();
  ASSERT_TRUE(task_failed);
  auto blocked = fresh<&buggy>("buggy");
  auto r = blocked.apply(second_task);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(), "workflow 'buggy' threw: index 7 of 3");
  auto failing = fresh<&buggy>("buggy", worker::PanicPolicy::kFailWorkflow);
  auto f = failing.apply(second_task);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f->commands.at(0).fail_workflow_execution().failure().message(), "index 7 of 3");
}

TEST(Stackful, ACancelReachesTheWaitAndCleanupRunsNonCancellable) {
  const v1::History h = recorded::replays_as_recorded(cleanup_wf, "checkout", "stackful_cleanup");
  const auto first = recorded::recorded_commands(h, 1);
  ASSERT_EQ(first.size(), 1u);
  const auto second = recorded::recorded_commands(h, 2);
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[0].activity_task_cancel_requested().scheduled_event_id(), first[0].event_id());
  EXPECT_EQ(second[1].activity_task_scheduled().activity_type().name(), "refund");
  EXPECT_TRUE(h.events(h.events_size() - 1).has_workflow_execution_canceled());
}

TEST(Stackful, BranchesRunOnStacksOfTheirOwnInTheSameOrderOnReplay) {
  const v1::History h = recorded::replays_as_recorded(branches_wf, "branches", "stackful_branches");
  const auto first = recorded::recorded_commands(h, 1);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].activity_task_scheduled().activity_id(), "1");
  EXPECT_EQ(first[1].activity_task_scheduled().activity_id(), "2");
  EXPECT_EQ(recorded::completed_result(h), "a/ra b/rb")
      << "b's charge completed first, so b scheduled its refund first";
  recorded::expect_replays_to_the_end(branches_wf, h);
}

TEST(Stackful, ATimerRacesAnActivityAndTheLoserIsCanceled) {
  const v1::History h = recorded::replays_as_recorded(race_wf, "race", "stackful_race");
  ASSERT_EQ(recorded::recorded_commands(h, 1).size(), 2u);
  const auto second = recorded::recorded_commands(h, 2);
  ASSERT_EQ(second.size(), 2u);
  EXPECT_TRUE(second[0].has_activity_task_cancel_requested());
  EXPECT_EQ(payload_string(second[1].workflow_execution_completed().result()), "gave up");
}

// The three below are about the first task alone, whose three events the
// engine writes the same way: built by hand.
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
