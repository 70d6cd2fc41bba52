// WorkflowInstance against histories built event by event, as the engine
// would record them: commands come out of activations, replay reproduces
// them, and code that changed under a running execution is caught.
#include "worker/workflow_instance.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <regex>

#include "tests/worker/history_recorder.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

struct Order {
  std::string id;
  int64_t cents = 0;
  MSGPACK_DEFINE_MAP(id, cents);
};

std::string charge(ActivityContext&, Order) { return ""; }
std::string ship(ActivityContext&, std::string) { return ""; }
inline constexpr Activity<&charge> charge_card{"charge"};
inline constexpr Activity<&ship> ship_parcel{"ship"};

Workflow<std::string> checkout(WorkflowContext& ctx, Order order) {
  std::string receipt = co_await ctx.execute(charge_card, ActivityOptions::start_to_close(30s), order);
  co_await ctx.sleep(1h);
  co_return receipt + " for " + order.id;
}

// The same workflow after someone swapped the activities around.
Workflow<std::string> checkout_v2(WorkflowContext& ctx, Order order) {
  std::string tracking = co_await ctx.execute(ship_parcel, ActivityOptions::start_to_close(30s), order.id);
  co_return tracking;
}

// Checkout after someone made it wait for an approval first.
inline constexpr Signal<std::string> approval{"approval"};
Workflow<std::string> awaits_approval(WorkflowContext& ctx, Order order) {
  co_return co_await ctx.wait(approval) + " for " + order.id;
}

Workflow<int64_t> refuses(WorkflowContext&, Order order) {
  if (order.cents > 1000) throw ApplicationError("TooExpensive", "orders over $10 need approval", true);
  co_return order.cents;
}

// Races the charge against a one-minute timeout.
Workflow<std::string> charge_or_give_up(WorkflowContext& ctx, Order order) {
  auto charged = ctx.execute(charge_card, ActivityOptions::start_to_close(5min), order);
  auto deadline = ctx.sleep(1min);
  if (co_await any(charged, deadline) == 1) co_return "gave up";
  co_return co_await charged;
}

// Charges and ships at the same time. Scheduled in two statements: the order
// of a call's arguments is up to the compiler, the order of statements is not.
Workflow<std::string> both(WorkflowContext& ctx, Order order) {
  auto charged = ctx.execute(charge_card, ActivityOptions::start_to_close(5min), order);
  auto shipped = ctx.execute(ship_parcel, ActivityOptions::start_to_close(5min), order.id);
  auto [receipt, tracking] = co_await all(charged, shipped);
  co_return receipt + "+" + tracking;
}

// Draws random numbers and a UUID, then waits on a timer.
Workflow<std::string> dice(WorkflowContext& ctx) {
  const std::string first = std::to_string(ctx.random() % 1000) + " " + ctx.uuid();
  co_await ctx.sleep(1s);
  co_return first + " " + std::to_string(ctx.random() % 1000);
}

// Reports where it is at each step.
Workflow<std::string> introspect(WorkflowContext& ctx) {
  const std::string before = std::to_string(ctx.info().history_length) + (ctx.replaying() ? " replaying" : " live");
  co_await ctx.sleep(1s);
  co_return before + ", then " + std::to_string(ctx.info().history_length) + " " + ctx.info().workflow_id;
}

// Logs at each step: the first line must not come back when it replays.
Workflow<void> chatty(WorkflowContext& ctx) {
  ctx.log("charging \"order 1\"");
  co_await ctx.sleep(1s);
  ctx.logger().warn("done");
}

// What `run` wrote to stderr.
std::string stderr_of(const std::function<void()>& run) {
  std::fflush(stderr);
  char path[] = "/tmp/reprise-stderr-XXXXXX";
  const int fd = mkstemp(path);
  const int saved = dup(STDERR_FILENO);
  dup2(fd, STDERR_FILENO);
  run();
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::string out;
  char buf[4096];
  lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  unlink(path);
  return out;
}

worker::WorkflowInstance fresh(worker::WorkflowStarter starter) {
  return worker::WorkflowInstance("checkout", std::move(starter));
}

TEST(WorkflowInstance, RunsCheckoutTaskByTaskAndReplaysItIdentically) {
  const Order order{"order-7", 1250};
  Recorder rec(to_payloads(order));

  auto live = fresh(worker::make_starter<&checkout>("checkout"));
  auto first = live.apply(rec.history());
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_EQ(first->commands.size(), 1u);
  const auto& schedule = first->commands[0].schedule_activity_task();
  EXPECT_EQ(schedule.activity_type().name(), "charge");
  EXPECT_EQ(schedule.activity_id(), "1");
  EXPECT_EQ(from_payload<Order>(schedule.input().payloads(0), "input").cents, 1250);
  EXPECT_EQ(schedule.start_to_close_timeout().seconds(), 30);

  rec.completed(first->commands);
  rec.activity_completed(to_payload(std::string("receipt-42")));
  rec.task();
  // A sticky worker applies only what is new; a fresh one replays it all.
  v1::History page;
  const v1::History all = rec.history();
  for (const auto& e : all.events()) {
    if (e.event_id() > live.last_event_id()) *page.add_events() = e;
  }
  auto second = live.apply(page);
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  ASSERT_EQ(second->commands.size(), 1u);
  EXPECT_EQ(second->commands[0].start_timer().start_to_fire_timeout().seconds(), 3600);

  rec.completed(second->commands);
  rec.timer_fired();
  rec.task();
  auto replayed = fresh(worker::make_starter<&checkout>("checkout"));
  auto third = replayed.apply(rec.history());
  ASSERT_TRUE(third.is_ok()) << third.status().to_string();
  ASSERT_EQ(third->commands.size(), 1u);
  ASSERT_TRUE(third->commands[0].has_complete_workflow_execution());
  EXPECT_EQ(from_payload<std::string>(third->commands[0].complete_workflow_execution().result().payloads(0), "r"),
            "receipt-42 for order-7");
}

TEST(WorkflowInstance, ChangedCodeUnderARunningExecutionIsNonDeterminismNamingTheEvent) {
  Recorder rec(to_payloads(Order{"order-8", 500}));
  auto original = fresh(worker::make_starter<&checkout>("checkout"));
  auto first = original.apply(rec.history());
  ASSERT_TRUE(first.is_ok());
  rec.completed(first->commands);
  rec.activity_completed(to_payload(std::string("receipt")));
  rec.task();

  auto changed = fresh(worker::make_starter<&checkout_v2>("checkout"));
  auto r = changed.apply(rec.history());
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(),
            "non-determinism at event 5: history has ActivityTaskScheduled 'charge' (activity id 1), the workflow "
            "code did ScheduleActivityTask 'ship' (activity id 1) now");
}

TEST(WorkflowInstance, AFailedActivityThrowsIntoTheWorkflowAndFailsIt) {
  Recorder rec(to_payloads(Order{"order-9", 100}));
  auto instance = fresh(worker::make_starter<&checkout>("checkout"));
  auto first = instance.apply(rec.history());
  rec.completed(first->commands);
  rec.activity_failed("card declined");
  rec.task();
  auto replayed = fresh(worker::make_starter<&checkout>("checkout"));
  auto r = replayed.apply(rec.history());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->commands.size(), 1u);
  const auto& failure = r->commands[0].fail_workflow_execution().failure();
  EXPECT_EQ(failure.message(), "activity 'charge' failed: card declined");
  EXPECT_EQ(failure.type(), "CardDeclined");
}

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

TEST(WorkflowInstance, InputThatDoesNotDecodeFailsTheTaskNotTheWorkflow) {
  Recorder rec(to_payloads(std::string("not an order"), int64_t{3}));
  auto instance = fresh(worker::make_starter<&checkout>("checkout"));
  auto r = instance.apply(rec.history());
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_NE(r.status().message().find("the input of workflow 'checkout' has 2 values, the code expects 1"),
            std::string::npos)
      << r.status().to_string();
}

TEST(WorkflowInstance, CodeThatIssuesACommandHistoryNeverRecordedIsNonDeterminism) {
  Recorder rec(to_payloads(Order{"order-10", 1}));
  rec.completed({});  // history says the first task issued nothing...
  rec.task();
  auto instance = fresh(worker::make_starter<&checkout>("checkout"));
  auto r = instance.apply(rec.history());  // ...but the code schedules 'charge' at once
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("the workflow issued ScheduleActivityTask 'charge'"), std::string::npos)
      << r.status().to_string();
}

TEST(WorkflowInstance, HistoryWithAnEventTheCodeNeverProducedIsNonDeterminism) {
  Recorder rec(to_payloads(Order{"order-10", 1}));
  auto original = fresh(worker::make_starter<&checkout>("checkout"));
  auto first = original.apply(rec.history());
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  rec.completed(first->commands);  // history: ActivityTaskScheduled 'charge'...
  rec.task();
  auto changed = fresh(worker::make_starter<&awaits_approval>("checkout"));
  auto r = changed.apply(rec.history());  // ...but the code now waits for a signal and issues nothing
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(),
            "non-determinism: history has event 5 ActivityTaskScheduled 'charge' (activity id 1), but the workflow "
            "code did nothing there now");
}

TEST(WorkflowInstance, AnOutcomeForAnActivityTheCodeNeverScheduledIsNonDeterminism) {
  Recorder rec(to_payloads(Order{"order-11", 1}));
  auto original = fresh(worker::make_starter<&checkout>("checkout"));
  auto first = original.apply(rec.history());
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  rec.completed(first->commands);
  rec.activity_completed(to_payload(std::string("receipt")));
  rec.activity_completed_at(99, to_payload(std::string("stray")));  // no event 99 scheduled anything
  rec.task();
  auto replayed = fresh(worker::make_starter<&checkout>("checkout"));
  auto r = replayed.apply(rec.history());
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("for an activity the workflow code never scheduled"), std::string::npos)
      << r.status().to_string();
}

TEST(WorkflowInstance, AnyGivesTheFirstResultInHistoryOrder) {
  Recorder rec(to_payloads(Order{"slow", 1}));
  auto instance = fresh(worker::make_starter<&charge_or_give_up>("charge_or_give_up"));
  auto first = instance.apply(rec.history());
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_EQ(first->commands.size(), 2u) << "both the activity and the timer, in one task";
  rec.completed(first->commands);
  rec.timer_fired();  // the timer wins
  rec.task();
  auto replayed = fresh(worker::make_starter<&charge_or_give_up>("charge_or_give_up"));
  auto r = replayed.apply(rec.history());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(from_payload<std::string>(r->commands.at(0).complete_workflow_execution().result().payloads(0), "r"),
            "gave up");
}

TEST(WorkflowInstance, AllRunsActivitiesSideBySideAndKeepsArgumentOrder) {
  Recorder rec(to_payloads(Order{"o1", 1}));
  auto instance = fresh(worker::make_starter<&both>("both"));
  auto first = instance.apply(rec.history());
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_EQ(first->commands.size(), 2u) << "both scheduled before either is awaited to the end";
  rec.completed(first->commands);
  // The second finishes first; the tuple still follows argument order.
  rec.activity_completed_at(6, to_payload(std::string("tracking-9")));
  rec.activity_completed_at(5, to_payload(std::string("receipt-1")));
  rec.task();
  auto replayed = fresh(worker::make_starter<&both>("both"));
  auto r = replayed.apply(rec.history());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(from_payload<std::string>(r->commands.at(0).complete_workflow_execution().result().payloads(0), "r"),
            "receipt-1+tracking-9");
}

TEST(WorkflowInstance, RandomnessReplaysAndDiffersBetweenRuns) {
  auto result_of = [](const std::string& run_id) {
    Recorder rec(v1::Payloads(), run_id);
    auto live = fresh(worker::make_starter<&dice>("dice"));
    auto first = live.apply(rec.history());
    rec.completed(first->commands);
    rec.timer_fired();
    rec.task();
    auto replayed = fresh(worker::make_starter<&dice>("dice"));
    auto r = replayed.apply(rec.history());
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    return from_payload<std::string>(r->commands.at(0).complete_workflow_execution().result().payloads(0), "r");
  };
  const std::string a = result_of("run-a");
  EXPECT_EQ(result_of("run-a"), a) << "the same run draws the same numbers on every replay";
  EXPECT_NE(result_of("run-b"), a);
  EXPECT_TRUE(std::regex_match(
      a, std::regex("[0-9]+ [0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12} [0-9]+")))
      << a;
}

TEST(WorkflowInstance, InfoFollowsTheTaskAndReplayIsKnown) {
  Recorder rec{v1::Payloads()};
  auto live = fresh(worker::make_starter<&introspect>("introspect"));
  live.set_execution("wf-9", "run-1");
  auto first = live.apply(rec.history());
  ASSERT_TRUE(first.is_ok());
  rec.completed(first->commands);
  rec.timer_fired();
  rec.task();
  auto replayed = fresh(worker::make_starter<&introspect>("introspect"));
  replayed.set_execution("wf-9", "run-1");
  auto r = replayed.apply(rec.history());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(from_payload<std::string>(r->commands.at(0).complete_workflow_execution().result().payloads(0), "r"),
            "3 replaying, then 8 wf-9");
  EXPECT_EQ(replayed.info().workflow_type, "checkout") << "the type the instance was made for";
}

TEST(WorkflowInstance, LogLinesAreWrittenOnceNotOnReplay) {
  Recorder rec{v1::Payloads()};
  auto live = fresh(worker::make_starter<&chatty>("chatty"));
  live.set_execution("wf-log", "run-1");
  worker::ApplyResult first = worker::Activation{};
  const std::string live_output = stderr_of([&] { first = live.apply(rec.history()); });
  ASSERT_TRUE(first.is_ok());
  EXPECT_EQ(live_output, "level=info workflow_id=wf-log run_id=run-1 msg=\"charging \\\"order 1\\\"\"\n");

  rec.completed(first->commands);
  rec.timer_fired();
  rec.task();
  auto replayed = fresh(worker::make_starter<&chatty>("chatty"));
  replayed.set_execution("wf-log", "run-1");
  const std::string replay_output = stderr_of([&] { ASSERT_TRUE(replayed.apply(rec.history()).is_ok()); });
  EXPECT_EQ(replay_output, "level=warn workflow_id=wf-log run_id=run-1 msg=\"done\"\n")
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
