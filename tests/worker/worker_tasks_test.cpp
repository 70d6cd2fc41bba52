// The Worker's handling of single workflow tasks, against a scripted
// connection: a query that arrives while a task is in flight, a task the
// worker cannot process, and the cause a failed task is reported with. The
// tasks carry the history the real engine wrote for `steps`
// (recorded/worker_tasks.hpp), cut where its second task is in flight.
#include "tests/worker/recorded/worker_tasks.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

#include "reprise/worker.hpp"
#include "tests/worker/history_recorder.hpp"
#include "tests/worker/recorded_history.hpp"
#include "tests/worker/scripted_connection.hpp"
#include "worker/workflow_instance.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

using recorded::worker_tasks::side_effects_computed;
using recorded::worker_tasks::steps;
using recorded::worker_tasks::steps_wf;

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

// The recorded history of `steps` through its second task's
// WorkflowTaskStarted (its first task, the timer fired): that task is in
// flight.
v1::History steps_history_with_a_task_in_flight() {
  return recorded::through_task(recorded::history("worker_tasks_steps"), 2);
}

v1::PollWorkflowTaskResponse task_with(const std::string& token, const v1::History& history) {
  v1::PollWorkflowTaskResponse task;
  task.set_task_token(token);
  task.mutable_workflow_execution()->set_workflow_id("steps-1");
  task.mutable_workflow_execution()->set_run_id(
      history.events(0).workflow_execution_started().original_execution_run_id());
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
  const v1::History in_flight = steps_history_with_a_task_in_flight();
  const int computed_before = side_effects_computed.load();
  auto connection = std::make_shared<ScriptedConnection>();
  auto worker = worker_for(connection, steps_wf);
  EXPECT_EQ(answer_state_query(*connection, in_flight), "started")
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
  const v1::History in_flight = steps_history_with_a_task_in_flight();
  auto connection = std::make_shared<ScriptedConnection>();
  connection->history = [](const v1::GetHistoryRequest&) -> v1::GetHistoryResponse {
    throw RpcError(static_cast<int>(StatusCode::kInternal), "GetHistory: the page does not parse");
  };
  auto worker = worker_for(connection, steps_wf);
  // A sticky task this worker has nothing cached for (the events after the
  // first task's WorkflowTaskStarted): it must fetch the rest.
  v1::PollWorkflowTaskResponse sticky = task_with("task-1", recorded::events_after(in_flight, 3));
  sticky.mutable_workflow_execution()->set_run_id(
      in_flight.events(0).workflow_execution_started().original_execution_run_id());
  connection->queue_task(sticky);

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
  const v1::History in_flight = steps_history_with_a_task_in_flight();
  {
    auto connection = std::make_shared<ScriptedConnection>();
    auto worker = worker_for(connection, steps_changed_wf);
    connection->queue_task(task_with("task-1", in_flight));
    auto answer = connection->next_answer();
    ASSERT_TRUE(answer && answer->failed);
    EXPECT_EQ(answer->failed->cause(), v1::WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISM)
        << answer->failed->failure().message();
    worker->stop();
  }
  {
    auto connection = std::make_shared<ScriptedConnection>();
    auto worker = worker_for(connection, buggy_wf);
    connection->queue_task(task_with("task-1", in_flight));
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

  const v1::History in_flight = steps_history_with_a_task_in_flight();
  worker::WorkflowInstance changed("steps", worker::make_starter<&steps_changed>("steps"));
  EXPECT_TRUE(changed.apply(in_flight).nondeterministic());
  worker::WorkflowInstance gap("steps", worker::make_starter<&steps>("steps"));
  const auto not_continuing = gap.apply(recorded::events_after(in_flight, 2));
  EXPECT_FALSE(not_continuing.is_ok());
  EXPECT_FALSE(not_continuing.nondeterministic()) << not_continuing.status().to_string();
}

}  // namespace
}  // namespace reprise
