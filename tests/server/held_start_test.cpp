// Tasks started in memory (engine/held_starts.hpp, docs/engine.md "Tasks
// started in memory"): a real server killed between a task's hand-out and
// its completion hands the task out again after the restart, refuses the
// token from before it, and the history shows one start, the one that
// completed; a held start is committed on its own once it has been held
// --max-held-start, or when its start-to-close timeout is due.
#include <gtest/gtest.h>

#include <thread>

#include "tests/server/server_harness.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

v1::PollWorkflowTaskResponse poll_workflow_as(Stub& stub, const std::string& identity) {
  for (int i = 0; i < 20; ++i) {
    v1::PollWorkflowTaskRequest r;
    r.mutable_task_queue()->set_name("q");
    r.set_identity(identity);
    v1::PollWorkflowTaskResponse out;
    EXPECT_TRUE(call(stub, &Stub::PollWorkflowTask, r, &out).ok());
    if (!out.task_token().empty()) return out;
  }
  ADD_FAILURE() << "no workflow task came";
  return {};
}

v1::PollActivityTaskResponse poll_activity_as(Stub& stub, const std::string& identity) {
  for (int i = 0; i < 20; ++i) {
    v1::PollActivityTaskRequest r;
    r.mutable_task_queue()->set_name("q");
    r.set_identity(identity);
    v1::PollActivityTaskResponse out;
    EXPECT_TRUE(call(stub, &Stub::PollActivityTask, r, &out).ok());
    if (!out.task_token().empty()) return out;
  }
  ADD_FAILURE() << "no activity task came";
  return {};
}

grpc::Status start(Stub& stub, const std::string& id) {
  v1::StartWorkflowResponse ignored;
  return call(stub, &Stub::StartWorkflow, start_request(id), &ignored);
}

grpc::Status complete_activity(Stub& stub, const std::string& token, const std::string& result) {
  v1::CompleteActivityRequest r;
  r.set_task_token(token);
  r.mutable_result()->add_payloads()->set_data(result);
  v1::CompleteActivityResponse ignored;
  return call(stub, &Stub::CompleteActivity, r, &ignored);
}

std::vector<v1::EventType> types(const v1::GetHistoryResponse& history) {
  std::vector<v1::EventType> out;
  for (const auto& e : history.history().events()) out.push_back(e.event_type());
  return out;
}

// Events numbered 1, 2, 3, ... with no gap.
void expect_consecutive(const v1::GetHistoryResponse& history) {
  for (int i = 0; i < history.history().events_size(); ++i) {
    EXPECT_EQ(history.history().events(i).event_id(), i + 1);
  }
}

TEST(HeldStarts, AWorkflowTaskHandedOutBeforeACrashIsHandedOutAgainAndItsOldTokenRefused) {
  TempDir dir;
  const std::string db = dir.file("held.db");
  v1::PollWorkflowTaskResponse before;
  {
    Server server(db, {"--max-held-start", "60s"});
    ASSERT_TRUE(start(server.stub(), "wf").ok());
    before = poll_workflow_as(server.stub(), "worker-before");
    ASSERT_FALSE(before.task_token().empty());
    ASSERT_GT(before.history().events_size(), 0);
    EXPECT_EQ(before.history().events(before.history().events_size() - 1).event_type(),
              v1::EVENT_TYPE_WORKFLOW_TASK_STARTED)
        << "the worker is shown its started event";
    EXPECT_EQ(types(history_of(server.stub(), "wf")).back(), v1::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED)
        << "the start is held in memory, not committed";
    server.kill9();
  }
  Server server(db);
  const v1::PollWorkflowTaskResponse after = poll_workflow_as(server.stub(), "worker-after");
  ASSERT_FALSE(after.task_token().empty()) << "the task row was still there: handed out again";
  EXPECT_EQ(after.started_event_id(), before.started_event_id());
  EXPECT_EQ(after.attempt(), before.attempt());

  grpc::Status s = complete(server.stub(), before.task_token(), {finish("from before the crash")});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  EXPECT_NE(s.error_message().find("handed out again"), std::string::npos) << s.error_message();
  s = complete(server.stub(), after.task_token(), {finish("after")});
  ASSERT_TRUE(s.ok()) << s.error_message();

  const v1::GetHistoryResponse h = history_of(server.stub(), "wf");
  using E = v1::EventType;
  EXPECT_EQ(types(h), (std::vector<E>{E::EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, E::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
                                      E::EVENT_TYPE_WORKFLOW_TASK_STARTED, E::EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
                                      E::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED}));
  expect_consecutive(h);
  ASSERT_EQ(h.history().events_size(), 5);
  EXPECT_EQ(h.history().events(2).workflow_task_started().identity(), "worker-after");
  EXPECT_EQ(h.history().events(2).event_id(), after.started_event_id());
  EXPECT_EQ(h.history().events(4).workflow_execution_completed().result().payloads(0).data(), "after");
}

TEST(HeldStarts, AnActivityHandedOutBeforeACrashIsHandedOutAgainAndItsOldTokenRefused) {
  TempDir dir;
  const std::string db = dir.file("held.db");
  v1::PollActivityTaskResponse before;
  {
    Server server(db, {"--max-held-start", "60s"});
    ASSERT_TRUE(start(server.stub(), "wf").ok());
    const auto task = poll_workflow_as(server.stub(), "worker");
    ASSERT_TRUE(complete(server.stub(), task.task_token(), {schedule("1")}).ok());
    before = poll_activity_as(server.stub(), "worker-before");
    ASSERT_FALSE(before.task_token().empty());
    const auto described = describe(server.stub(), "wf");
    ASSERT_EQ(described.pending_activities_size(), 1);
    EXPECT_TRUE(described.pending_activities(0).started()) << "describe shows the held start";
    server.kill9();
  }
  Server server(db);
  const v1::PollActivityTaskResponse after = poll_activity_as(server.stub(), "worker-after");
  ASSERT_FALSE(after.task_token().empty()) << "the task row was still there: handed out again";
  EXPECT_EQ(after.attempt(), 1) << "losing the hand-out is not a failed attempt";

  grpc::Status s = complete_activity(server.stub(), before.task_token(), "from before the crash");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  EXPECT_NE(s.error_message().find("handed out again"), std::string::npos) << s.error_message();
  s = complete_activity(server.stub(), after.task_token(), "after");
  ASSERT_TRUE(s.ok()) << s.error_message();

  const v1::GetHistoryResponse h = history_of(server.stub(), "wf");
  expect_consecutive(h);
  EXPECT_EQ(count_events(h, v1::EVENT_TYPE_ACTIVITY_TASK_STARTED), 1);
  EXPECT_EQ(count_events(h, v1::EVENT_TYPE_ACTIVITY_TASK_COMPLETED), 1);
  for (int i = 0; i < h.history().events_size(); ++i) {
    const auto& e = h.history().events(i);
    if (!e.has_activity_task_completed()) continue;
    EXPECT_EQ(e.activity_task_completed().result().payloads(0).data(), "after");
    const auto& started = h.history().events(i - 1);
    ASSERT_TRUE(started.has_activity_task_started()) << "the start comes right before its completion";
    EXPECT_EQ(started.activity_task_started().identity(), "worker-after");
    EXPECT_EQ(started.activity_task_started().attempt(), 1);
    EXPECT_EQ(e.activity_task_completed().started_event_id(), started.event_id());
  }
}

// A graceful shutdown (SIGTERM) does not commit held starts either: after
// the restart the task is handed out again, as after a crash.
TEST(HeldStarts, AStartHeldAtAGracefulShutdownIsHandedOutAgainAfterTheRestart) {
  TempDir dir;
  const std::string db = dir.file("held.db");
  v1::PollWorkflowTaskResponse before;
  {
    Server server(db, {"--max-held-start", "60s"});
    ASSERT_TRUE(start(server.stub(), "wf").ok());
    before = poll_workflow_as(server.stub(), "worker-before");
    ASSERT_FALSE(before.task_token().empty());
    ASSERT_EQ(server.terminate(), 0);
  }
  Server server(db);
  const v1::PollWorkflowTaskResponse after = poll_workflow_as(server.stub(), "worker-after");
  ASSERT_FALSE(after.task_token().empty()) << "the shutdown committed the held start";
  EXPECT_EQ(after.started_event_id(), before.started_event_id());
  EXPECT_EQ(after.attempt(), before.attempt());
  grpc::Status s = complete(server.stub(), before.task_token(), {finish("from before the shutdown")});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  ASSERT_TRUE(complete(server.stub(), after.task_token(), {finish("after")}).ok());
  const v1::GetHistoryResponse h = history_of(server.stub(), "wf");
  expect_consecutive(h);
  EXPECT_EQ(count_events(h, v1::EVENT_TYPE_WORKFLOW_TASK_STARTED), 1);
  ASSERT_EQ(h.history().events_size(), 5);
  EXPECT_EQ(h.history().events(2).workflow_task_started().identity(), "worker-after");
}

TEST(HeldStarts, AStickyTaskStartedInMemoryWhenItsFallbackTimerFiresIsStillRunAfterACrash) {
  TempDir dir;
  const std::string db = dir.file("held.db");
  {
    Server server(db, {"--max-held-start", "60s"});
    v1::StartWorkflowRequest request = start_request("wf");
    request.mutable_workflow_task_timeout()->set_seconds(3);
    v1::StartWorkflowResponse started;
    ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, request, &started).ok());
    v1::CompleteWorkflowTaskRequest first;
    first.set_task_token(poll_workflow_as(server.stub(), "worker").task_token());
    first.mutable_sticky_attributes()->mutable_worker_task_queue()->set_name("sticky-1");
    first.mutable_sticky_attributes()->mutable_schedule_to_start_timeout()->set_seconds(1);
    v1::CompleteWorkflowTaskResponse ignored;
    ASSERT_TRUE(call(server.stub(), &Stub::CompleteWorkflowTask, first, &ignored).ok());
    ASSERT_TRUE(poke(server.stub(), "wf").ok());
    v1::PollWorkflowTaskRequest sticky;
    sticky.mutable_task_queue()->set_name("sticky-1");
    v1::PollWorkflowTaskResponse task;
    ASSERT_TRUE(call(server.stub(), &Stub::PollWorkflowTask, sticky, &task).ok());
    ASSERT_FALSE(task.task_token().empty());
    // The sticky fallback timer comes due (1 s) and finds the task started
    // in memory; it goes only with the start committed. The crash comes
    // before the task's own timeout (3 s) would commit the start.
    std::this_thread::sleep_for(1600ms);
    server.kill9();
  }
  Server server(db);
  // The start survived with its timeout, which hands the task to the normal
  // queue; had the timer gone alone, the task would wait on a sticky queue
  // nobody polls, with nothing left to move it.
  const auto retry = poll_workflow_as(server.stub(), "worker-after");
  ASSERT_FALSE(retry.task_token().empty());
  ASSERT_TRUE(complete(server.stub(), retry.task_token(), {finish("done")}).ok());
  const auto h = history_of(server.stub(), "wf");
  expect_consecutive(h);
  EXPECT_EQ(count_events(h, v1::EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT), 1);
  EXPECT_EQ(types(h).back(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
}

TEST(HeldStarts, AStartHeldPastMaxHeldStartIsCommittedAndOutlivesACrash) {
  TempDir dir;
  const std::string db = dir.file("held.db");
  v1::PollWorkflowTaskResponse task;
  v1::PollActivityTaskResponse activity;
  {
    Server server(db, {"--max-held-start", "200ms"});
    ASSERT_TRUE(start(server.stub(), "wf").ok());
    ASSERT_TRUE(start(server.stub(), "wf2").ok());
    const auto first = poll_workflow_as(server.stub(), "worker");
    const std::string other = first.workflow_execution().workflow_id() == "wf" ? "wf2" : "wf";
    ASSERT_TRUE(complete(server.stub(), first.task_token(), {schedule("1")}).ok());
    task = poll_workflow_as(server.stub(), "worker");
    ASSERT_EQ(task.workflow_execution().workflow_id(), other);
    activity = poll_activity_as(server.stub(), "worker");
    // The timer loop commits them once held 200 ms (it looks at least once a second).
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (types(history_of(server.stub(), other)).back() != v1::EVENT_TYPE_WORKFLOW_TASK_STARTED &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(50ms);
    }
    ASSERT_EQ(types(history_of(server.stub(), other)).back(), v1::EVENT_TYPE_WORKFLOW_TASK_STARTED);
    std::this_thread::sleep_for(1500ms);  // the activity's, held as long
    server.kill9();
  }
  Server server(db);
  grpc::Status s = complete(server.stub(), task.task_token(), {finish("done")});
  EXPECT_TRUE(s.ok()) << "a committed start is the one the token names: " << s.error_message();
  s = complete_activity(server.stub(), activity.task_token(), "done");
  EXPECT_TRUE(s.ok()) << s.error_message();
  for (const std::string id : {"wf", "wf2"}) expect_consecutive(history_of(server.stub(), id));
}

TEST(HeldStarts, AHeldActivityStillTimesOutAtItsStartToCloseTimeout) {
  TempDir dir;
  Server server(dir.file("held.db"), {"--max-held-start", "60s"});
  ASSERT_TRUE(start(server.stub(), "wf").ok());
  const auto task = poll_workflow_as(server.stub(), "worker");
  v1::Command c = schedule("1");
  c.mutable_schedule_activity_task()->mutable_start_to_close_timeout()->set_seconds(1);
  ASSERT_TRUE(complete(server.stub(), task.task_token(), {c}).ok());
  const auto first = poll_activity_as(server.stub(), "worker");
  ASSERT_EQ(first.attempt(), 1);
  // Never completed: its in-memory deadline commits the start with its
  // timeout timer, which fails the attempt, and the retry policy schedules
  // attempt 2.
  const auto second = poll_activity_as(server.stub(), "worker");
  ASSERT_FALSE(second.task_token().empty());
  EXPECT_EQ(second.attempt(), 2);
  grpc::Status s = complete_activity(server.stub(), first.task_token(), "late");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  ASSERT_TRUE(complete_activity(server.stub(), second.task_token(), "done").ok());
  const auto h = history_of(server.stub(), "wf");
  expect_consecutive(h);
  EXPECT_EQ(count_events(h, v1::EVENT_TYPE_ACTIVITY_TASK_STARTED), 1);
}

}  // namespace
}  // namespace reprise
