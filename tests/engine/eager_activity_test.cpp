// Eager activity execution: a workflow-task completion that schedules an
// activity its worker asked to run itself starts the first attempt in the
// same transition and hands it back in the reply, with no poll.
#include "engine_fixture.hpp"

namespace reprise::engine {
namespace {

class EagerActivityTest : public EngineTest {
 public:
  static v1::Command schedule(const std::string& id, bool eager, const std::string& queue = "") {
    v1::Command c = schedule_greet();
    auto* a = c.mutable_schedule_activity_task();
    a->set_activity_id(id);
    a->set_request_eager_execution(eager);
    if (!queue.empty()) a->mutable_task_queue()->set_name(queue);
    return c;
  }

  Result<v1::CompleteWorkflowTaskResponse> complete_as(const std::string& token, std::vector<v1::Command> commands,
                                                       const std::string& identity = "eager-worker") {
    v1::CompleteWorkflowTaskRequest r;
    r.set_task_token(token);
    r.set_identity(identity);
    for (auto& c : commands) *r.add_commands() = std::move(c);
    return call(&Engine::complete_workflow_task, r);
  }

  // No activity task is queued for `queue`: a poll comes back empty when
  // its (300 ms) timeout passes.
  bool activity_queue_empty(const std::string& queue = "greetings") {
    v1::PollActivityTaskRequest r;
    r.mutable_task_queue()->set_name(queue);
    auto out = call(&Engine::poll_activity_task, r);
    return out.is_ok() && out->task_token().empty();
  }

  Status complete_activity(const std::string& token, const std::string& result) {
    v1::CompleteActivityRequest done;
    done.set_task_token(token);
    done.mutable_result()->add_payloads()->set_data(result);
    return call(&Engine::complete_activity, done).status();
  }

  v1::History history_of(const std::string& workflow_id) {
    v1::GetHistoryRequest r;
    r.mutable_workflow_execution()->set_workflow_id(workflow_id);
    auto out = call(&Engine::get_history, r);
    EXPECT_TRUE(out.is_ok()) << out.status().to_string();
    return out.is_ok() ? out->history() : v1::History();
  }
};

TEST_F(EagerActivityTest, AnActivityAskedForEagerlyComesBackInTheReplyAlreadyStarted) {
  ASSERT_TRUE(start("eager-1").is_ok());
  auto task = poll_workflow();
  auto reply = complete_as(task.task_token(), {schedule("1", true)});
  ASSERT_TRUE(reply.is_ok()) << reply.status().to_string();
  ASSERT_EQ(reply->activity_tasks_size(), 1);
  const v1::PollActivityTaskResponse& activity = reply->activity_tasks(0);
  EXPECT_FALSE(activity.task_token().empty());
  EXPECT_EQ(activity.activity_id(), "1");
  EXPECT_EQ(activity.activity_type().name(), "greet");
  EXPECT_EQ(activity.attempt(), 1);
  EXPECT_EQ(activity.workflow_execution().workflow_id(), "eager-1");
  EXPECT_EQ(activity.start_to_close_timeout().seconds(), 10);
  ASSERT_EQ(activity.input().payloads_size(), 1);
  EXPECT_EQ(activity.input().payloads(0).data(), "world");
  EXPECT_TRUE(activity_queue_empty()) << "an eager activity has no task in the queue";

  ASSERT_TRUE(complete_activity(activity.task_token(), "Hello, world!").is_ok());
  auto second = poll_workflow();
  ASSERT_FALSE(second.task_token().empty());
  ASSERT_TRUE(complete(second.task_token(), {complete_with("Hello, world!")}).is_ok());

  const v1::History history = history_of("eager-1");
  std::vector<v1::EventType> types;
  for (const auto& e : history.events()) types.push_back(e.event_type());
  const std::vector<v1::EventType> expected = {
      v1::EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,  v1::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
      v1::EVENT_TYPE_WORKFLOW_TASK_STARTED,       v1::EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
      v1::EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,     v1::EVENT_TYPE_ACTIVITY_TASK_STARTED,
      v1::EVENT_TYPE_ACTIVITY_TASK_COMPLETED,     v1::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
      v1::EVENT_TYPE_WORKFLOW_TASK_STARTED,       v1::EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
      v1::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED};
  ASSERT_EQ(types, expected) << "the same history as a polled activity";
  EXPECT_EQ(history.events(5).activity_task_started().identity(), "eager-worker")
      << "started by the worker that completed the task";
}

TEST_F(EagerActivityTest, WithoutTheRequestOrOnAnotherQueueTheActivityGoesToItsQueue) {
  ASSERT_TRUE(start("eager-2").is_ok());
  auto task = poll_workflow();
  auto reply = complete_as(task.task_token(), {schedule("plain", false), schedule("elsewhere", true, "other-queue")});
  ASSERT_TRUE(reply.is_ok()) << reply.status().to_string();
  EXPECT_EQ(reply->activity_tasks_size(), 0) << "only an activity on the workflow's own queue may run eagerly";
  EXPECT_EQ(poll_activity().activity_id(), "plain");
  v1::PollActivityTaskRequest other;
  other.mutable_task_queue()->set_name("other-queue");
  auto elsewhere = call(&Engine::poll_activity_task, other);
  ASSERT_TRUE(elsewhere.is_ok());
  EXPECT_EQ(elsewhere->activity_id(), "elsewhere");
}

TEST_F(EagerActivityTest, ACompletionThatClosesTheRunStartsNothing) {
  ASSERT_TRUE(start("eager-3").is_ok());
  auto task = poll_workflow();
  auto reply = complete_as(task.task_token(), {schedule("1", true), complete_with("done")});
  ASSERT_TRUE(reply.is_ok()) << reply.status().to_string();
  EXPECT_EQ(reply->activity_tasks_size(), 0);
  EXPECT_TRUE(activity_queue_empty());
  EXPECT_EQ(wait_for_close("eager-3").event_type(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
}

TEST_F(EagerActivityTest, BeyondThePerTaskLimitActivitiesGoToTheirQueue) {
  restart([](EngineOptions& o) { o.config.max_eager_activities_per_task = 2; });
  ASSERT_TRUE(start("eager-4").is_ok());
  auto task = poll_workflow();
  auto reply = complete_as(task.task_token(), {schedule("a", true), schedule("b", true), schedule("c", true)});
  ASSERT_TRUE(reply.is_ok()) << reply.status().to_string();
  ASSERT_EQ(reply->activity_tasks_size(), 2);
  EXPECT_EQ(reply->activity_tasks(0).activity_id(), "a");
  EXPECT_EQ(reply->activity_tasks(1).activity_id(), "b");
  EXPECT_EQ(poll_activity().activity_id(), "c");
}

// The reply can be lost (the worker crashed, the connection dropped): the
// attempt is started and nobody runs it. Its start-to-close timeout retries
// it through the queue, after a restart too, as for a polled attempt.
TEST_F(EagerActivityTest, AnEagerAttemptWhoseReplyWasLostIsRetriedAfterItsTimeout) {
  ASSERT_TRUE(start("eager-5").is_ok());
  auto task = poll_workflow();
  v1::Command c = schedule("1", true);
  c.mutable_schedule_activity_task()->mutable_retry_policy()->mutable_initial_interval()->set_seconds(1);
  auto reply = complete_as(task.task_token(), {c});
  ASSERT_TRUE(reply.is_ok());
  ASSERT_EQ(reply->activity_tasks_size(), 1);
  const std::string lost_token = reply->activity_tasks(0).task_token();
  restart();
  EXPECT_TRUE(activity_queue_empty()) << "the attempt is running, as far as the engine knows";

  // Past the start-to-close timeout (10 s), then the retry's backoff (1 s).
  for (int i = 0; i < 20; ++i) {
    clock_.advance(1s);
    engine_->check_timers();
    std::this_thread::sleep_for(20ms);
  }
  // The backoff runs from the clock's time when the timeout was committed,
  // which a slow commit (a loaded machine's fsync) can make late in the
  // steps above: the clock goes on a second at a time until the retry is
  // queued.
  auto retry = poll_activity();
  for (int i = 0; i < 30 && retry.task_token().empty(); ++i) {
    clock_.advance(1s);
    engine_->check_timers();
    retry = poll_activity();
  }
  ASSERT_FALSE(retry.task_token().empty()) << "the timed-out attempt is retried through the queue";
  EXPECT_EQ(retry.attempt(), 2);
  EXPECT_FALSE(complete_activity(lost_token, "late").is_ok()) << "the lost attempt's outcome is refused";
  ASSERT_TRUE(complete_activity(retry.task_token(), "on time").is_ok());
}

}  // namespace
}  // namespace reprise::engine
