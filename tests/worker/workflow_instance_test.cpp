// WorkflowInstance against histories the real engine wrote
// (tests/worker/histories/, recorded by record_histories.cpp from the
// workflows of recorded_workflows.hpp): replay reproduces every command the
// engine recorded, task by task, from scratch and on a cached instance, and
// code that changed under a running execution is caught. Histories are
// built by hand only for a first task (three events, which the engine
// writes the same) and for what the engine never writes.
#include "worker/workflow_instance.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <functional>

#include "tests/captured_stderr.hpp"
#include "tests/worker/history_recorder.hpp"
#include "tests/worker/recorded_history.hpp"
#include "tests/worker/recorded_workflows.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

using recorded::Order;

Workflow<int64_t> refuses(WorkflowContext&, Order order) {
  if (order.cents > 1000) throw ApplicationError("TooExpensive", "orders over $10 need approval", true);
  co_return order.cents;
}

worker::WorkflowInstance fresh(worker::WorkflowStarter starter) {
  return worker::WorkflowInstance("checkout", std::move(starter));
}

using recorded::expect_replays_as_recorded;
using recorded::through_task;

std::string result_of(const worker::ApplyResult& r) {
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  if (!r.is_ok() || r->commands.empty() || !r->commands.back().has_complete_workflow_execution()) return "";
  return from_payload<std::string>(r->commands.back().complete_workflow_execution().result().payloads(0), "r");
}

// The recorded result of a completed run.
std::string recorded_result(const v1::History& h) {
  const v1::HistoryEvent& last = h.events(h.events_size() - 1);
  EXPECT_TRUE(last.has_workflow_execution_completed());
  return from_payload<std::string>(last.workflow_execution_completed().result().payloads(0), "r");
}

TEST(WorkflowInstance, RunsCheckoutTaskByTaskAndReplaysItIdentically) {
  const v1::History h = recorded::history("checkout");
  ASSERT_EQ(recorded::tasks_in(h), 3) << "charge, the hour's timer, the result";
  expect_replays_as_recorded(h, "checkout-7", "checkout", worker::make_starter<&recorded::checkout>("checkout"));

  auto first = fresh(worker::make_starter<&recorded::checkout>("checkout")).apply(through_task(h, 1));
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_EQ(first->commands.size(), 1u);
  const auto& schedule = first->commands[0].schedule_activity_task();
  EXPECT_EQ(schedule.activity_type().name(), "charge");
  EXPECT_EQ(schedule.activity_id(), "1");
  EXPECT_EQ(from_payload<Order>(schedule.input().payloads(0), "input").cents, 1250);
  EXPECT_EQ(schedule.start_to_close_timeout().seconds(), 30);
  auto second = fresh(worker::make_starter<&recorded::checkout>("checkout")).apply(through_task(h, 2));
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  ASSERT_EQ(second->commands.size(), 1u);
  EXPECT_EQ(second->commands[0].start_timer().start_to_fire_timeout().seconds(), 3600);
  EXPECT_EQ(result_of(fresh(worker::make_starter<&recorded::checkout>("checkout")).apply(through_task(h, 3))),
            "receipt-42 for order-7");
  EXPECT_EQ(recorded_result(h), "receipt-42 for order-7");
}

TEST(WorkflowInstance, ChangedCodeUnderARunningExecutionIsNonDeterminismNamingTheEvent) {
  auto changed = fresh(worker::make_starter<&recorded::checkout_v2>("checkout"));
  auto r = changed.apply(through_task(recorded::history("checkout"), 2));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(),
            "non-determinism at event 5: history has ActivityTaskScheduled 'charge' (activity id 1), the workflow "
            "code did ScheduleActivityTask 'ship' (activity id 1) now");
}

TEST(WorkflowInstance, AFailedActivityThrowsIntoTheWorkflowAndFailsIt) {
  const v1::History h = recorded::history("checkout_declined");
  expect_replays_as_recorded(h, "checkout-9", "checkout", worker::make_starter<&recorded::checkout>("checkout"));
  auto r = fresh(worker::make_starter<&recorded::checkout>("checkout")).apply(through_task(h, 2));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->commands.size(), 1u);
  const auto& failure = r->commands[0].fail_workflow_execution().failure();
  EXPECT_EQ(failure.message(), "activity 'charge' failed: card declined");
  EXPECT_EQ(failure.type(), "CardDeclined");
}

// A first task's history (WorkflowExecutionStarted, WorkflowTaskScheduled,
// WorkflowTaskStarted) is built by hand: the engine writes those three the
// same way, and there is nothing recorded to replay.
TEST(WorkflowInstance, ApplicationErrorsFailTheWorkflowWithTheirType) {
  Recorder rec(to_payloads(Order{"big", 5000}));
  auto instance = fresh(worker::make_starter<&refuses>("refuses"));
  auto r = instance.apply(rec.history());
  ASSERT_TRUE(r.is_ok());
  const auto& failure = r->commands.at(0).fail_workflow_execution().failure();
  EXPECT_EQ(failure.type(), "TooExpensive");
  EXPECT_TRUE(failure.non_retryable());
  EXPECT_EQ(failure.message(), "orders over $10 need approval");
}

// A first task's history, by hand as above: input of the wrong shape.
TEST(WorkflowInstance, InputThatDoesNotDecodeFailsTheTaskNotTheWorkflow) {
  Recorder rec(to_payloads(std::string("not an order"), int64_t{3}));
  auto instance = fresh(worker::make_starter<&recorded::checkout>("checkout"));
  auto r = instance.apply(rec.history());
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_NE(r.status().message().find("the input of workflow 'checkout' has 2 values, the code expects 1"),
            std::string::npos)
      << r.status().to_string();
}

TEST(WorkflowInstance, CodeThatIssuesACommandHistoryNeverRecordedIsNonDeterminism) {
  // The recorded run's first task issued nothing (it waited for a signal)...
  const v1::History h = recorded::history("approval");
  expect_replays_as_recorded(h, "approval-10", "checkout",
                             worker::make_starter<&recorded::awaits_approval>("checkout"));
  ASSERT_TRUE(recorded::recorded_commands(h, 1).empty());
  auto instance = fresh(worker::make_starter<&recorded::checkout>("checkout"));
  auto r = instance.apply(through_task(h, 2));  // ...but this code schedules 'charge' at once
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("the workflow issued ScheduleActivityTask 'charge'"), std::string::npos)
      << r.status().to_string();
}

TEST(WorkflowInstance, HistoryWithAnEventTheCodeNeverProducedIsNonDeterminism) {
  // History: ActivityTaskScheduled 'charge' at event 5...
  auto changed = fresh(worker::make_starter<&recorded::awaits_approval>("checkout"));
  auto r = changed.apply(through_task(recorded::history("checkout"), 2));
  // ...but the code now waits for a signal and issues nothing.
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(),
            "non-determinism: history has event 5 ActivityTaskScheduled 'charge' (activity id 1), but the workflow "
            "code did nothing there now");
}

// Built by hand on a recorded history: the engine never writes an outcome
// for an activity that is not pending (it refuses the completion's token),
// so a history with one can only come from a damaged or foreign file.
TEST(WorkflowInstance, AnOutcomeForAnActivityTheCodeNeverScheduledIsNonDeterminism) {
  const v1::History original = through_task(recorded::history("checkout"), 2);
  v1::History h;
  int64_t id = 0;
  for (const auto& e : original.events()) {
    *h.add_events() = e;
    h.mutable_events(h.events_size() - 1)->set_event_id(++id);
    if (e.has_activity_task_completed()) {
      v1::HistoryEvent stray;
      stray.set_event_id(++id);
      stray.set_event_type(v1::EVENT_TYPE_ACTIVITY_TASK_COMPLETED);
      stray.mutable_activity_task_completed()->set_scheduled_event_id(99);  // no event 99 scheduled anything
      *stray.mutable_activity_task_completed()->mutable_result()->add_payloads() = to_payload(std::string("stray"));
      *h.add_events() = stray;
    }
  }
  ASSERT_EQ(h.events_size(), original.events_size() + 1);
  auto replayed = fresh(worker::make_starter<&recorded::checkout>("checkout"));
  auto r = replayed.apply(h);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("for an activity the workflow code never scheduled"), std::string::npos)
      << r.status().to_string();
}

TEST(WorkflowInstance, AnyGivesTheFirstResultInHistoryOrder) {
  // Recorded: the one-minute timer fired while the charge still ran.
  const v1::History h = recorded::history("give_up");
  ASSERT_EQ(recorded::recorded_commands(h, 1).size(), 2u) << "both the activity and the timer, in one task";
  const v1::History last_task = through_task(h, 2);
  bool timer_fired = false;
  for (const auto& e : last_task.events()) {
    timer_fired = timer_fired || e.has_timer_fired();
    EXPECT_FALSE(e.has_activity_task_completed()) << "the charge finished before the timer";
  }
  ASSERT_TRUE(timer_fired);
  expect_replays_as_recorded(h, "slow-1", "charge_or_give_up",
                             worker::make_starter<&recorded::charge_or_give_up>("charge_or_give_up"));
  EXPECT_EQ(result_of(fresh(worker::make_starter<&recorded::charge_or_give_up>("charge_or_give_up")).apply(last_task)),
            "gave up");
}

TEST(WorkflowInstance, AllRunsActivitiesSideBySideAndKeepsArgumentOrder) {
  const v1::History h = recorded::history("both");
  ASSERT_EQ(recorded::recorded_commands(h, 1).size(), 2u) << "both scheduled before either is awaited to the end";
  // Recorded: the second (ship, event 6) finished before the first (charge,
  // event 5); the tuple still follows argument order.
  std::vector<int64_t> completed;
  for (const auto& e : h.events()) {
    if (e.has_activity_task_completed()) completed.push_back(e.activity_task_completed().scheduled_event_id());
  }
  ASSERT_EQ(completed, (std::vector<int64_t>{6, 5}));
  expect_replays_as_recorded(h, "both-1", "both", worker::make_starter<&recorded::both>("both"));
  EXPECT_EQ(recorded_result(h), "receipt-1+tracking-9");
}

// dice's result: "N UUID N", a number, a version-4 UUID and a number. By
// hand, not std::regex: g++ 12 -O2 under ASan reports its automaton as maybe
// uninitialized, which fails ./run test-asan with CI=true (-Werror).
bool is_dice_result(const std::string& result) {
  const auto is_number = [](const std::string& s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
  };
  const size_t first = result.find(' ');
  const size_t last = result.rfind(' ');
  if (first == std::string::npos || last == first) return false;
  const std::string uuid = result.substr(first + 1, last - first - 1);
  // x: a lowercase hex digit; y: the variant, 8, 9, a or b.
  const std::string shape = "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx";
  if (uuid.size() != shape.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    const char c = uuid[i];
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    if (shape[i] == 'x' ? !hex : shape[i] == 'y' ? std::string("89ab").find(c) == std::string::npos : c != shape[i])
      return false;
  }
  return is_number(result.substr(0, first)) && is_number(result.substr(last + 1));
}

TEST(WorkflowInstance, RandomnessReplaysAndDiffersBetweenRuns) {
  // Two runs of dice: replaying each reproduces its own recorded draws.
  const v1::History a = recorded::history("dice_a");
  const v1::History b = recorded::history("dice_b");
  expect_replays_as_recorded(a, "dice-a", "dice", worker::make_starter<&recorded::dice>("dice"));
  expect_replays_as_recorded(b, "dice-b", "dice", worker::make_starter<&recorded::dice>("dice"));
  EXPECT_NE(recorded_result(a), recorded_result(b));
  EXPECT_TRUE(is_dice_result(recorded_result(a))) << recorded_result(a);
}

// The draws are seeded from the history (the started event's
// original_execution_run_id: the run's own id when the event was written, or,
// in histories written before first_execution_run_id existed, the chain's
// first run), never from the run id the task names: a history replayed under
// another run id (reprise replay, a test) draws what the run drew.
TEST(WorkflowInstance, RandomnessIsSeededFromTheStartedEventNotFromTheTasksRunId) {
  const v1::History a = recorded::history("dice_a");
  auto later_run = fresh(worker::make_starter<&recorded::dice>("dice"));
  later_run.set_execution("dice-a", "another-run-id");
  EXPECT_EQ(result_of(later_run.apply(through_task(a, 2))), recorded_result(a));
}

TEST(WorkflowInstance, InfoFollowsTheTaskAndReplayIsKnown) {
  const v1::History h = recorded::history("introspect");
  EXPECT_EQ(recorded_result(h), "3 live, then 8 wf-9") << "as the engine's worker ran it";
  auto replayed = fresh(worker::make_starter<&recorded::introspect>("introspect"));
  replayed.set_execution("wf-9", h.events(0).workflow_execution_started().original_execution_run_id());
  EXPECT_EQ(result_of(replayed.apply(through_task(h, 2))), "3 replaying, then 8 wf-9");
  EXPECT_EQ(replayed.info().workflow_type, "checkout") << "the type the instance was made for";
}

TEST(WorkflowInstance, LogLinesAreWrittenOnceNotOnReplay) {
  const v1::History h = recorded::history("chatty");
  const std::string run_id = h.events(0).workflow_execution_started().original_execution_run_id();
  auto live = fresh(worker::make_starter<&recorded::chatty>("chatty"));
  live.set_execution("wf-log", run_id);
  worker::ApplyResult first = worker::Activation{};
  const std::string live_output =
      ::reprise::testing::captured_stderr_of([&] { first = live.apply(through_task(h, 1)); });
  ASSERT_TRUE(first.is_ok());
  EXPECT_EQ(live_output, "level=info workflow_id=wf-log run_id=" + run_id + " msg=\"charging \\\"order 1\\\"\"\n");

  auto replayed = fresh(worker::make_starter<&recorded::chatty>("chatty"));
  replayed.set_execution("wf-log", run_id);
  const std::string replay_output =
      ::reprise::testing::captured_stderr_of([&] { ASSERT_TRUE(replayed.apply(through_task(h, 2)).is_ok()); });
  EXPECT_EQ(replay_output, "level=warn workflow_id=wf-log run_id=" + run_id + " msg=\"done\"\n")
      << "the first line was not repeated";
}

TEST(Codec, IntegersStayExactAndWrongTypesAreNamed) {
  const int64_t big = (int64_t{1} << 62) + 1;
  EXPECT_EQ(from_payload<int64_t>(to_payload(big), "x"), big);
  EXPECT_EQ(from_payload<uint64_t>(to_payload(UINT64_MAX), "x"), UINT64_MAX);
  const auto roundtrip = from_payload<std::map<std::string, std::vector<Order>>>(
      to_payload(std::map<std::string, std::vector<Order>>{{"a", {Order{"o", 3}}}}), "x");
  EXPECT_EQ(roundtrip.at("a").at(0).id, "o");
  try {
    from_payload<Order>(to_payload(std::string("nope")), "the input of 'charge'");
    FAIL() << "decoded a string as an Order";
  } catch (const PayloadError& e) {
    EXPECT_NE(std::string(e.what()).find("the input of 'charge' does not decode as the expected type"),
              std::string::npos);
  }
  static_assert(Serializable<Order>);
  static_assert(Serializable<std::optional<std::vector<int>>>);
  static_assert(!Serializable<Order*>);
  static_assert(!Serializable<std::function<void()>>);
}

}  // namespace
}  // namespace reprise
