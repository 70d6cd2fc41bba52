// The SDK against a real reprise-server: typed workflows and activities on a
// Worker, started and awaited through a Client.
#include <atomic>
#include <future>
#include <thread>

#include "../server/server_harness.hpp"
#include "reprise/client.hpp"
#include "reprise/worker.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

struct Order {
  std::string id;
  int64_t cents = 0;
  MSGPACK_DEFINE_MAP(id, cents);
};

std::atomic<int> charge_attempts{0};

std::string charge(ActivityContext& ctx, Order order) {
  ++charge_attempts;
  if (ctx.info().attempt == 1) {
    ctx.heartbeat(std::string("reserved"));
    throw std::runtime_error("card network timeout");  // retryable
  }
  if (!ctx.info().deadline || *ctx.info().deadline <= ctx.info().started_time) {
    throw ApplicationError("NoDeadline", "a start-to-close timeout must give the attempt a deadline", true);
  }
  return "receipt-" + order.id + "-" + ctx.last_heartbeat<std::string>().value_or("none");
}
inline constexpr Activity<&charge> charge_card{"charge"};

int64_t refuse(ActivityContext&, int64_t cents) {
  throw ApplicationError("CardDeclined", "declined: " + std::to_string(cents), true);
}
inline constexpr Activity<&refuse> refuse_card{"refuse"};

Workflow<std::string> checkout(WorkflowContext& ctx, Order order) {
  auto options = ActivityOptions::start_to_close(10s).retry_initial_interval(100ms);
  std::string receipt = co_await ctx.execute(charge_card, options, order);
  co_await ctx.sleep(200ms);
  co_return receipt;
}
inline constexpr WorkflowDef<&checkout> checkout_wf{"checkout"};

Workflow<int64_t> declined(WorkflowContext& ctx, int64_t cents) {
  co_return co_await ctx.execute(refuse_card, ActivityOptions::start_to_close(10s), cents);
}
inline constexpr WorkflowDef<&declined> declined_wf{"declined"};

struct Approval {
  std::string by;
  bool approved = false;
  MSGPACK_DEFINE_MAP(by, approved);
};
inline constexpr Signal<Approval> approve{"approve"};
inline constexpr Signal<int64_t> add_item{"add_item"};
inline constexpr Query<int64_t> total_so_far{"total"};

// Collects items until an approval arrives; signals sent before the workflow
// waits for them are kept.
Workflow<std::string> cart(WorkflowContext& ctx, int64_t expected_items) {
  int64_t total = 0;
  ctx.on_query(total_so_far, [&total] { return total; });
  for (int64_t i = 0; i < expected_items; ++i) total += co_await ctx.wait(add_item);
  Approval a = co_await ctx.wait(approve);
  co_return (a.approved ? "approved by " : "rejected by ") + a.by + ", total " + std::to_string(total);
}
inline constexpr WorkflowDef<&cart> cart_wf{"cart"};

TEST(Sdk, TypedSignalsReachAWaitingWorkflowInOrder) {
  TempDir dir;
  Server server(dir.file("signals.db"));
  auto connection = Connection::remote(server.address());
  Client client(connection);
  auto run = client.start(cart_wf, {.id = "cart-1", .task_queue = "carts"}, int64_t{3});
  client.signal("cart-1", add_item, 5);  // before any worker runs: buffered in history
  Worker worker(connection, {.task_queue = "carts", .workflow_threads = 1, .activity_threads = 1});
  worker.register_workflow(cart_wf);
  worker.start();
  client.signal("cart-1", add_item, 7);
  for (int i = 0; i < 50 && client.query("cart-1", total_so_far) != 12; ++i) {
    std::this_thread::sleep_for(20ms);  // until the worker has taken the second item in
  }
  EXPECT_EQ(client.query("cart-1", total_so_far), 12) << "a query answers from the workflow's state";
  try {
    client.query("cart-1", Query<int64_t>{"no-such-query"});
    FAIL() << "an unknown query was answered";
  } catch (const RpcError& e) {
    EXPECT_NE(std::string(e.what()).find("has no query 'no-such-query' (it answers: total)"), std::string::npos)
        << e.what();
  }
  client.signal("cart-1", add_item, 30);
  client.signal("cart-1", approve, Approval{"ana", true});
  EXPECT_EQ(run.result(), "approved by ana, total 42");
  worker.stop();
}

// The handler reads `total`, a local of the workflow function: once the
// function has returned, a query must be refused, not answered from a
// destroyed variable (found by the simulator, issue 20).
TEST(Sdk, AQueryOfARunWhoseWorkflowFunctionReturnedIsRefused) {
  TempDir dir;
  Server server(dir.file("closed-query.db"));
  auto connection = Connection::remote(server.address());
  Client client(connection);
  auto run = client.start(cart_wf, {.id = "cart-closed", .task_queue = "carts"}, int64_t{1});
  client.signal("cart-closed", add_item, 5);
  client.signal("cart-closed", approve, Approval{"ana", true});
  Worker worker(connection, {.task_queue = "carts", .workflow_threads = 1, .activity_threads = 1});
  worker.register_workflow(cart_wf);
  worker.start();
  ASSERT_EQ(run.result(), "approved by ana, total 5");
  try {
    const int64_t answer = client.query("cart-closed", total_so_far);
    FAIL() << "a query of the closed run was answered " << answer << " from state that ended with the workflow";
  } catch (const RpcError& e) {
    EXPECT_NE(std::string(e.what()).find("workflow 'cart' has returned: query 'total' is answered only while the "
                                         "workflow function runs"),
              std::string::npos)
        << e.what();
  }
  worker.stop();
}

TEST(Sdk, ATypedWorkflowRunsEndToEndWithRetriesAndATimer) {
  charge_attempts = 0;  // from zero also when the test is repeated (--gtest_repeat)
  TempDir dir;
  Server server(dir.file("sdk.db"));
  auto connection = Connection::remote(server.address());
  Worker worker(connection, {.task_queue = "orders", .workflow_threads = 1, .activity_threads = 2});
  worker.register_workflow(checkout_wf);
  worker.register_workflow(declined_wf);
  worker.register_activity(charge_card);
  worker.register_activity(refuse_card);
  worker.start();

  Client client(connection);
  auto run = client.start(checkout_wf, {.id = "order-7", .task_queue = "orders"}, Order{"o7", 1250});
  EXPECT_EQ(run.result(), "receipt-o7-reserved") << "the second attempt saw the first one's heartbeat";
  EXPECT_EQ(charge_attempts.load(), 2);

  auto refused = client.start(declined_wf, {.id = "order-8", .task_queue = "orders"}, int64_t{999});
  try {
    refused.result();
    FAIL() << "the workflow should have failed";
  } catch (const WorkflowFailedError& e) {
    EXPECT_EQ(std::string(e.what()), "workflow 'order-8' failed: activity 'refuse' failed: declined: 999");
    EXPECT_EQ(e.type(), "CardDeclined");
  }
  worker.stop();
}

TEST(Sdk, EmbeddedModeRunsTheSameWorkflowsWithNoServer) {
  TempDir dir;
  auto connection = Connection::embedded(dir.file("embedded.db"));
  Worker worker(connection, {.task_queue = "local", .workflow_threads = 1, .activity_threads = 1});
  worker.register_workflow(cart_wf);
  worker.start();
  Client client(connection);
  auto run = client.start(cart_wf, {.id = "cart-local", .task_queue = "local"}, int64_t{1});
  client.signal("cart-local", add_item, 12);
  client.signal("cart-local", approve, Approval{"bo", false});
  EXPECT_EQ(run.result(), "rejected by bo, total 12");
  worker.stop();

  try {
    Connection::embedded(dir.file("no/such/dir/x.db"));
    FAIL() << "opened a database in a directory that does not exist";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open the embedded engine"), std::string::npos) << e.what();
  }
}

// Approves one cart, asks another to cancel, then approves a cart that is not there.
Workflow<std::string> manager(WorkflowContext& ctx, std::string approve_id, std::string cancel_id) {
  const Approval yes{"manager", true};
  co_await ctx.signal_external(approve_id, approve, yes);
  co_await ctx.cancel_external(cancel_id, "abandoned");
  try {
    co_await ctx.signal_external("cart-404", approve, yes);
  } catch (const ExternalWorkflowError& e) {
    co_return e.cause() + " " + e.workflow_id();
  }
  co_return "all delivered";
}
inline constexpr WorkflowDef<&manager> manager_wf{"manager"};

TEST(Sdk, AWorkflowSignalsAndCancelsOtherWorkflowsThroughTheServer) {
  TempDir dir;
  Server server(dir.file("external.db"));
  auto connection = Connection::remote(server.address());
  Worker worker(connection, {.task_queue = "carts", .workflow_threads = 1, .activity_threads = 1});
  worker.register_workflow(cart_wf);
  worker.register_workflow(manager_wf);
  worker.start();
  Client client(connection);
  auto approved = client.start(cart_wf, {.id = "cart-a", .task_queue = "carts"}, int64_t{0});
  auto abandoned = client.start(cart_wf, {.id = "cart-b", .task_queue = "carts"}, int64_t{0});
  auto run =
      client.start(manager_wf, {.id = "manager", .task_queue = "carts"}, std::string("cart-a"), std::string("cart-b"));
  EXPECT_EQ(run.result(20s), "NOT_FOUND cart-404");
  EXPECT_EQ(approved.result(20s), "approved by manager, total 0") << "the typed signal reached the cart's wait";
  try {
    abandoned.result(20s);
    FAIL() << "the cart asked to cancel did not end as canceled";
  } catch (const WorkflowFailedError& e) {
    EXPECT_EQ(std::string(e.what()), "workflow 'cart-b' was canceled");
  }
  worker.stop();
}

std::atomic<int> step_runs{0};
std::string step(ActivityContext&, int64_t n) { return std::to_string(n); }
inline constexpr Activity<&step> step_activity{"step"};

// Counts how often its body starts: once per replay from the beginning.
Workflow<std::string> stepper(WorkflowContext& ctx, int64_t steps) {
  ++step_runs;
  std::string out;
  for (int64_t i = 1; i <= steps; ++i)
    out += co_await ctx.execute(step_activity, ActivityOptions::start_to_close(5s), i);
  co_return out;
}
inline constexpr WorkflowDef<&stepper> stepper_wf{"stepper"};

// Queries while a workflow task is in flight (docs/sdk.md, "Queries"): the
// run's first task, then a later one, is held inside its code (a side
// effect, then a local activity, each waiting for the test) while a query
// arrives. No code of the task in flight may run for the query: before the
// first task has completed the query waits for it (as Temporal's server
// does) and answers the state that task left; during a later task it
// answers at once from the tasks completed before.
std::atomic<int> held_side_effects{0};
std::atomic<int> held_local_runs{0};
std::atomic<int> released_tasks{0};

// Holds the calling task until the test has released `task` tasks (10 s at most).
void hold_until_released(int task) {
  for (int i = 0; i < 2000 && released_tasks.load() < task; ++i) std::this_thread::sleep_for(5ms);
}

std::string held_local(ActivityContext&, std::string step) {
  ++held_local_runs;
  hold_until_released(2);
  return step + " done";
}
inline constexpr Activity<&held_local> held_local_activity{"held_local"};
inline constexpr Query<std::string> stage_query{"stage"};
inline constexpr Signal<int64_t> next_task{"next"};

Workflow<std::string> held_tasks(WorkflowContext& ctx) {
  std::string stage = "not started";
  ctx.on_query(stage_query, [&stage] { return stage; });
  ctx.side_effect([] {
    ++held_side_effects;
    hold_until_released(1);
    return 1;
  });
  ctx.log("held-tasks: the first task ran");
  stage = "first task done";
  co_await ctx.wait(next_task);
  stage = co_await ctx.execute_local(held_local_activity, LocalActivityOptions::start_to_close(20s),
                                     std::string("second task"));
  ctx.side_effect([] { return ++held_side_effects; });
  ctx.log("held-tasks: the second task ran");
  co_await ctx.wait(next_task);
  co_return stage;
}
inline constexpr WorkflowDef<&held_tasks> held_tasks_wf{"held_tasks"};

int occurrences(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(Sdk, AQueryRunsNoCodeOfATaskInFlightAndBeforeTheFirstTaskWaitsForIt) {
  held_side_effects = 0;
  held_local_runs = 0;
  released_tasks = 0;
  TempDir dir;
  Server server(dir.file("held-query.db"));
  auto connection = Connection::remote(server.address());
  Client client(connection);
  // Two workflow threads: one holds the task, the other is free for the query.
  Worker worker(connection, {.task_queue = "held", .workflow_threads = 2, .activity_threads = 1});
  worker.register_workflow(held_tasks_wf);
  worker.register_activity(held_local_activity);
  testing::internal::CaptureStderr();
  worker.start();
  auto run = client.start(held_tasks_wf, {.id = "held-1", .task_queue = "held"});
  for (int i = 0; i < 500 && held_side_effects.load() == 0; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(held_side_effects.load(), 1) << "the first task never reached its side effect";

  auto early = std::async(std::launch::async, [&client] { return client.query("held-1", stage_query); });
  EXPECT_EQ(early.wait_for(500ms), std::future_status::timeout) << "answered before the first task completed";
  EXPECT_EQ(held_side_effects.load(), 1) << "the query ran the first task's side effect";
  released_tasks = 1;
  EXPECT_EQ(early.get(), "first task done") << "the state the first task left";

  client.signal("held-1", next_task, 1);
  for (int i = 0; i < 500 && held_local_runs.load() == 0; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(held_local_runs.load(), 1) << "the second task never reached its local activity";
  EXPECT_EQ(client.query("held-1", stage_query), "first task done")
      << "answered during the second task, from the first";
  EXPECT_EQ(held_local_runs.load(), 1) << "the query ran the local activity of the task in flight";
  EXPECT_EQ(held_side_effects.load(), 1) << "the query ran a side effect";
  released_tasks = 2;
  std::string stage;
  for (int i = 0; i < 100 && (stage = client.query("held-1", stage_query)) != "second task done"; ++i) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(stage, "second task done");
  client.signal("held-1", next_task, 2);
  EXPECT_EQ(run.result(), "second task done");
  worker.stop();
  const std::string logged = testing::internal::GetCapturedStderr();
  EXPECT_EQ(occurrences(logged, "held-tasks: the first task ran"), 1) << logged;
  EXPECT_EQ(occurrences(logged, "held-tasks: the second task ran"), 1) << logged;
  EXPECT_EQ(held_side_effects.load(), 2);
  EXPECT_EQ(held_local_runs.load(), 1);
}

TEST(Sdk, ACachedWorkflowMovesOnWithoutReplayAndAnUncachedOneReplays) {
  TempDir dir;
  auto connection = Connection::embedded(dir.file("sticky.db"));
  Client client(connection);
  for (int cache : {100, 0}) {
    step_runs = 0;
    Worker worker(connection,
                  {.task_queue = "steps", .workflow_threads = 1, .activity_threads = 1, .cache_size = cache});
    worker.register_workflow(stepper_wf);
    worker.register_activity(step_activity);
    worker.start();
    auto run = client.start(stepper_wf, {.id = "steps-" + std::to_string(cache), .task_queue = "steps"}, int64_t{4});
    EXPECT_EQ(run.result(), "1234");
    worker.stop();
    if (cache > 0) {
      EXPECT_EQ(step_runs.load(), 1) << "five workflow tasks, one run of the body: the cache carried it";
    } else {
      EXPECT_EQ(step_runs.load(), 5) << "without a cache every task replays from the start";
    }
  }
}

TEST(Sdk, AStickyTaskForAnEvictedWorkflowFetchesItsHistoryAndReplays) {
  TempDir dir;
  auto connection = Connection::embedded(dir.file("evicted.db"));
  Client client(connection);
  step_runs = 0;
  // Pages of 5 events: every replay crosses several page boundaries.
  Worker worker(
      connection,
      {.task_queue = "tight", .workflow_threads = 1, .activity_threads = 1, .cache_size = 1, .history_page_events = 5});
  worker.register_workflow(stepper_wf);
  worker.register_activity(step_activity);
  worker.start();
  // Two workflows take turns; a cache of one evicts each for the other.
  auto a = client.start(stepper_wf, {.id = "a", .task_queue = "tight"}, int64_t{9});
  auto b = client.start(stepper_wf, {.id = "b", .task_queue = "tight"}, int64_t{9});
  EXPECT_EQ(a.result(), "123456789");
  EXPECT_EQ(b.result(), "123456789");
  worker.stop();
  EXPECT_GT(step_runs.load(), 2) << "evicted workflows were replayed from fetched history";
}

TEST(Sdk, WorkerOptionsAndRegistrationsThatCannotWorkAreClearErrors) {
  auto connection = Connection::remote("127.0.0.1:1");
  EXPECT_THROW(Worker(connection, {.task_queue = ""}), std::invalid_argument);
  try {
    Worker(connection, {.task_queue = "q", .workflow_threads = 0});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "WorkerOptions.workflow_threads must be at least 1");
  }
  try {
    Worker(connection, {.task_queue = "q", .cache_size = 10, .cache_bytes = 0});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "WorkerOptions.cache_bytes is 0 while cache_size is 10: set cache_size to 0 to turn caching off");
  }
  EXPECT_THROW(Worker(connection, {.task_queue = "q", .activity_pollers = 0}), std::invalid_argument);
  Worker worker(connection, {.task_queue = "q"});
  worker.register_activity(charge_card);
  try {
    worker.register_activity(charge_card);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "activity 'charge' is already registered with this worker");
  }
}

}  // namespace
}  // namespace reprise
