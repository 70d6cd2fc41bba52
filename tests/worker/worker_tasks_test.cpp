// The Worker's handling of single workflow tasks, against a scripted
// connection: a query that arrives while a task is in flight, a task the
// worker cannot process, and the cause a failed task is reported with.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

#include "reprise/worker.hpp"
#include "tests/worker/history_recorder.hpp"
#include "tests/worker/scripted_connection.hpp"
#include "worker/workflow_instance.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

std::atomic<int> side_effects_computed{0};
inline constexpr Query<std::string> state_query{"state"};

// Its state changes (and a side effect runs) only in the task after the timer.
Workflow<std::string> steps(WorkflowContext& ctx) {
  std::string state = "started";
  ctx.on_query(state_query, [&state] { return state; });
  ctx.side_effect([] { return ++side_effects_computed; });
  co_await ctx.sleep(1min);
  state = "woke";
  ctx.side_effect([] { return ++side_effects_computed; });
  co_await ctx.sleep(1min);
  co_return state;
}
inline constexpr WorkflowDef<&steps> steps_wf{"steps"};

// The same workflow type after someone dropped the side effect.
Workflow<std::string> steps_changed(WorkflowContext& ctx) {
  co_await ctx.sleep(1min);
  co_return "changed";
}
inline constexpr WorkflowDef<&steps_changed> steps_changed_wf{"steps"};

Workflow<std::string> buggy(WorkflowContext&) {
  throw std::logic_error("index 7 of 3");
  co_return "";
}
inline constexpr WorkflowDef<&buggy> buggy_wf{"steps"};

// The history of `steps` through its first task, then the timer and the
// next task's WorkflowTaskStarted: that task is in flight.
Recorder steps_history_with_a_task_in_flight() {
  Recorder rec(to_payloads());
  worker::WorkflowInstance live("steps", worker::make_starter<&steps>("steps"));
  live.set_execution("wf-1", "run-1");
  auto first = live.apply(rec.history());
  EXPECT_TRUE(first.is_ok()) << first.status().to_string();
  if (first.is_ok()) rec.completed(first->commands);
  rec.timer_fired();
  rec.task();
  return rec;
}

v1::PollWorkflowTaskResponse task_with(const std::string& token, const v1::History& history) {
  v1::PollWorkflowTaskResponse task;
  task.set_task_token(token);
  task.mutable_workflow_execution()->set_workflow_id("wf-1");
  task.mutable_workflow_execution()->set_run_id("run-1");
  task.mutable_workflow_type()->set_name("steps");
  *task.mutable_history() = history;
  return task;
}

// A worker for `workflow` on a scripted connection, started.
template <auto Fn>
std::unique_ptr<Worker> worker_for(const std::shared_ptr<ScriptedConnection>& connection,
                                   const WorkflowDef<Fn>& workflow, int cache_size = 10) {
  auto worker = std::make_unique<Worker>(
      connection, WorkerOptions{.task_queue = "t", .workflow_threads = 1, .identity = "w", .cache_size = cache_size});
  worker->register_workflow(workflow);
  worker->start();
  return worker;
}

// Sends the worker a query task for "state" over `history` (which ends with
// a WorkflowTaskStarted: a task in flight) and returns its answer; "" and a
// test failure when it was not answered.
std::string answer_state_query(ScriptedConnection& connection, const v1::History& history) {
  v1::PollWorkflowTaskResponse query = task_with("query-1", history);
  (*query.mutable_queries())["q1"].set_query_type("state");
  connection.queue_task(query);
  auto answer = connection.next_answer();
  if (!answer || !answer->completed) {
    ADD_FAILURE() << "the query was not answered";
    return "";
  }
  const v1::WorkflowQueryResult& result = answer->completed->query_results().at("q1");
  if (!result.error_message().empty()) {
    ADD_FAILURE() << result.error_message();
    return "";
  }
  return from_payload<std::string>(result.answer().payloads(0), "answer");
}

TEST(WorkerQueries, AQueryDuringATaskInFlightSeesOnlyCompletedTasksAndRunsNoLiveCode) {
  const Recorder rec = steps_history_with_a_task_in_flight();
  const int computed_before = side_effects_computed.load();
  auto connection = std::make_shared<ScriptedConnection>();
  auto worker = worker_for(connection, steps_wf);
  EXPECT_EQ(answer_state_query(*connection, rec.history()), "started")
      << "the state of the last completed task, not of the one in flight";
  EXPECT_EQ(side_effects_computed.load(), computed_before) << "the in-flight task's side effect did not run";
  worker->stop();
}

// A history with no completed task: the engine holds a query until the run's
// first task completes (tests/sdk/end_to_end_test.cpp,
// Sdk.AQueryRunsNoCodeOfATaskInFlightAndBeforeTheFirstTaskWaitsForIt), so it
// sends one only for a run that closed before its first task. Built by hand
// for that reason. The worker must not run the first task's code to make up
// a state (it did: the side effect ran for the query).
TEST(WorkerQueries, AQueryBeforeAnyTaskCompletedRunsNoCodeAndSaysWhy) {
  const Recorder rec(to_payloads());  // the first task in flight
  const int computed_before = side_effects_computed.load();
  auto connection = std::make_shared<ScriptedConnection>();
  auto worker = worker_for(connection, steps_wf);
  v1::PollWorkflowTaskResponse query = task_with("query-1", rec.history());
  (*query.mutable_queries())["q1"].set_query_type("state");
  connection->queue_task(query);
  auto answer = connection->next_answer();
  ASSERT_TRUE(answer && answer->completed) << "the query was not answered";
  EXPECT_NE(answer->completed->query_results().at("q1").error_message().find(
                "workflow 'steps' has completed no workflow task: query 'state' has no state to read"),
            std::string::npos)
      << answer->completed->query_results().at("q1").ShortDebugString();
  EXPECT_EQ(side_effects_computed.load(), computed_before) << "the first task's side effect ran for the query";
  worker->stop();
}

TEST(WorkerFailures, ATaskWhoseHistoryCannotBeReadIsFailedWithTheReason) {
  const Recorder rec = steps_history_with_a_task_in_flight();
  auto connection = std::make_shared<ScriptedConnection>();
  connection->history = [](const v1::GetHistoryRequest&) -> v1::GetHistoryResponse {
    throw RpcError(static_cast<int>(StatusCode::kInternal), "GetHistory: the page does not parse");
  };
  auto worker = worker_for(connection, steps_wf);
  // A sticky task this worker has nothing cached for: it must fetch the rest.
  connection->queue_task(task_with("task-1", rec.history_from(7)));

  auto answer = connection->next_answer();
  ASSERT_TRUE(answer) << "the task was dropped without an answer";
  ASSERT_TRUE(answer->failed);
  EXPECT_EQ(answer->failed->task_token(), "task-1");
  EXPECT_EQ(answer->failed->cause(), v1::WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_CODE_ERROR);
  EXPECT_NE(answer->failed->failure().message().find("the page does not parse"), std::string::npos)
      << answer->failed->failure().message();
  worker->stop();
}

TEST(WorkerFailures, NonDeterminismAndBugsAreReportedWithTheirOwnCauses) {
  const Recorder rec = steps_history_with_a_task_in_flight();
  {
    auto connection = std::make_shared<ScriptedConnection>();
    auto worker = worker_for(connection, steps_changed_wf);
    connection->queue_task(task_with("task-1", rec.history()));
    auto answer = connection->next_answer();
    ASSERT_TRUE(answer && answer->failed);
    EXPECT_EQ(answer->failed->cause(), v1::WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISM)
        << answer->failed->failure().message();
    worker->stop();
  }
  {
    auto connection = std::make_shared<ScriptedConnection>();
    auto worker = worker_for(connection, buggy_wf);
    connection->queue_task(task_with("task-1", rec.history()));
    auto answer = connection->next_answer();
    ASSERT_TRUE(answer && answer->failed);
    EXPECT_EQ(answer->failed->cause(), v1::WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_CODE_ERROR);
    EXPECT_NE(answer->failed->failure().message().find("index 7 of 3"), std::string::npos);
    worker->stop();
  }
}

TEST(WorkerFailures, OnlyANonDeterminismIsOne) {
  // Another FAILED_PRECONDITION on the way (a codec, a store) is not a
  // non-determinism: the kind is carried by type, not guessed from the code.
  const worker::ApplyResult other = Status::failed_precondition("zstd is not available");
  EXPECT_FALSE(other.nondeterministic());
  const worker::ApplyResult diverged = worker::NonDeterminism{"non-determinism at event 5"};
  EXPECT_TRUE(diverged.nondeterministic());
  EXPECT_EQ(diverged.status().message(), "non-determinism at event 5");

  const Recorder rec = steps_history_with_a_task_in_flight();
  worker::WorkflowInstance changed("steps", worker::make_starter<&steps_changed>("steps"));
  EXPECT_TRUE(changed.apply(rec.history()).nondeterministic());
  worker::WorkflowInstance gap("steps", worker::make_starter<&steps>("steps"));
  const auto not_continuing = gap.apply(rec.history_from(3));
  EXPECT_FALSE(not_continuing.is_ok());
  EXPECT_FALSE(not_continuing.nondeterministic()) << not_continuing.status().to_string();
}

}  // namespace
}  // namespace reprise
