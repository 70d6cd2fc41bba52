// A local activity that outlives its workflow task's share, on a worker with
// caching off: the task completes to keep the workflow alive and drops its
// instance, the execution ends with nobody holding it, and the run's next
// task, replayed on the same worker, must take that outcome instead of
// starting the activity again from attempt 1 (with two such workers, or an
// execution that always ends between two tasks, the workflow never closed).
// WorkflowTaskRunner and LocalActivityExecutor on a scripted connection, on
// a clock the test moves and an activity pool the test runs by hand.
#include <gtest/gtest.h>

#include <deque>
#include <functional>

#include "reprise/worker.hpp"
#include "tests/worker/history_recorder.hpp"
#include "tests/worker/scripted_connection.hpp"
#include "worker/local_activity_executor.hpp"
#include "worker/workflow_task_runner.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

int slow_calls = 0;
std::string slow(ActivityContext&, std::string name) {
  ++slow_calls;
  return "Hello, " + name + "!";
}
inline constexpr Activity<&slow> slow_activity{"slow"};

Workflow<std::string> greet_locally(WorkflowContext& ctx, std::string name) {
  co_return co_await ctx.execute_local(slow_activity, LocalActivityOptions::start_to_close(1min), name);
}
inline constexpr WorkflowDef<&greet_locally> greet_locally_wf{"greet_locally"};

// One cache-off worker's runner and executor. The activity pool's jobs wait
// in `jobs` until the test runs them; waiting moves the clock to the deadline.
struct CacheOffWorker {
  CacheOffWorker() {
    slow_calls = 0;
    workflows.emplace(greet_locally_wf.name, std::make_shared<const worker::WorkflowStarter>(
                                                 worker::make_starter<&greet_locally>(greet_locally_wf.name)));
  }
  void run_jobs() {
    while (!jobs.empty()) {
      auto job = std::move(jobs.front());
      jobs.pop_front();
      job();
    }
  }

  Steady::time_point clock{};
  std::deque<std::function<void()>> jobs;
  ScriptedConnection connection;
  detail::Blobs blobs{connection, detail::BlobOptions{}};
  worker::StickyCache cache{0, 0};
  worker::WorkflowRegistry workflows;
  worker::LocalActivityExecutor::Function function = [](ActivityContext& ctx, const v1::Payloads& input) {
    auto [name] = from_payloads<std::string>(input, "the input of 'slow'");
    return to_payloads(slow(ctx, name));
  };
  worker::LocalActivityExecutor executor{
      [this](const std::string& type) { return type == slow_activity.name ? &function : nullptr; },
      [this](std::function<void()> job) { jobs.push_back(std::move(job)); }, &blobs,
      worker::SteppedTime{.now = [this] { return clock; },
                          .pause = [this](Steady::time_point until) { clock = until; }}};
  worker::WorkflowTaskRunner runner{connection, workflows, cache, blobs,
                                    worker::WorkflowTaskOptions{.identity = "w", .local_activities = &executor}};
};

v1::PollWorkflowTaskResponse task_of(const std::string& token, const v1::History& history) {
  v1::PollWorkflowTaskResponse task;
  task.set_task_token(token);
  task.mutable_workflow_execution()->set_workflow_id("wf-1");
  task.mutable_workflow_execution()->set_run_id("run-1");
  task.mutable_workflow_type()->set_name(greet_locally_wf.name);
  *task.mutable_history() = history;
  return task;
}

bool records_a_marker(const v1::CompleteWorkflowTaskRequest& r) {
  for (const v1::Command& c : r.commands())
    if (c.command_type() == v1::COMMAND_TYPE_RECORD_MARKER) return true;
  return false;
}

TEST(LocalActivityKeepAlive, AnExecutionThatEndedBetweenTwoTasksIsTakenByTheNextTaskNotRunAgain) {
  CacheOffWorker w;
  Recorder rec(to_payloads(std::string("Ann")));
  // The first task waits 8 s of its 10 s for the execution, which has not
  // run, and completes to be given the next at once.
  w.runner.run(task_of("t1", rec.history()));
  auto first = w.connection.next_answer(0ms);
  ASSERT_TRUE(first && first->completed);
  EXPECT_TRUE(first->completed->force_create_new_workflow_task());
  EXPECT_FALSE(records_a_marker(*first->completed));
  // The execution ends now, held by no task: caching is off.
  w.run_jobs();
  EXPECT_EQ(slow_calls, 1);
  rec.completed(std::vector<v1::Command>(first->completed->commands().begin(), first->completed->commands().end()));
  rec.task();
  w.runner.run(task_of("t2", rec.history()));
  auto second = w.connection.next_answer(0ms);
  ASSERT_TRUE(second && second->completed);
  EXPECT_TRUE(records_a_marker(*second->completed)) << "the ended execution's outcome, recorded";
  EXPECT_FALSE(second->completed->force_create_new_workflow_task());
  EXPECT_TRUE(w.jobs.empty()) << "no second execution started";
  w.run_jobs();
  EXPECT_EQ(slow_calls, 1);
}

TEST(LocalActivityKeepAlive, AnOutcomeATaskTookIsForgotten) {
  CacheOffWorker w;
  WorkflowInfo info;
  info.run_id = "run-1";
  v1::ScheduleActivityTaskCommandAttributes request;
  request.mutable_activity_type()->set_name(slow_activity.name);
  *request.mutable_input() = to_payloads(std::string("Bo"));
  auto first = w.executor.start(info, 1, request);
  w.run_jobs();
  ASSERT_TRUE(first->outcome());
  EXPECT_EQ(w.executor.start(info, 1, request), first) << "found again until taken";
  EXPECT_TRUE(w.jobs.empty());
  w.executor.taken(info, 1);
  EXPECT_NE(w.executor.start(info, 1, request), first) << "a task that replays without the marker runs it again";
  EXPECT_EQ(w.jobs.size(), 1u);
}

TEST(LocalActivityKeepAlive, AnOutcomeNoTaskTookIsKeptForAWhileOnly) {
  CacheOffWorker w;
  WorkflowInfo info;
  info.run_id = "run-1";
  v1::ScheduleActivityTaskCommandAttributes request;
  request.mutable_activity_type()->set_name(slow_activity.name);
  *request.mutable_input() = to_payloads(std::string("Cy"));
  auto first = w.executor.start(info, 1, request);
  w.run_jobs();
  w.clock += worker::LocalActivityExecutor::kKeepUntaken;
  EXPECT_EQ(w.executor.start(info, 1, request), first);
  w.clock += 1s;
  EXPECT_NE(w.executor.start(info, 1, request), first) << "the run's task went elsewhere; the outcome is dropped";
}

}  // namespace
}  // namespace reprise
