// Eager workflow tasks: an activity result whose next workflow task would go
// to the reporting worker's own (sticky) queue, or a start whose caller runs
// a worker, gets that task started in the same transition and handed back in
// the reply, with no poll; and a result wait that follows a run's chain.
#include "engine_fixture.hpp"

namespace reprise::engine {
namespace {

constexpr const char* kSticky = "greetings/w1";

class EagerWorkflowTaskTest : public EngineTest {
 public:
  // Starts `id` and runs its first task as worker w1, which keeps the
  // workflow cached (sticky) and runs the activity it schedules eagerly:
  // returns that activity's task.
  v1::PollActivityTaskResponse start_and_schedule(const std::string& id) {
    EXPECT_TRUE(start(id).is_ok());
    auto task = poll_workflow();
    v1::CompleteWorkflowTaskRequest r;
    r.set_task_token(task.task_token());
    r.set_identity("w1");
    v1::Command c = schedule_greet();
    c.mutable_schedule_activity_task()->set_request_eager_execution(true);
    *r.add_commands() = std::move(c);
    r.mutable_sticky_attributes()->mutable_worker_task_queue()->set_name(kSticky);
    auto reply = call(&Engine::complete_workflow_task, r);
    EXPECT_TRUE(reply.is_ok()) << reply.status().to_string();
    return reply.is_ok() && reply->activity_tasks_size() == 1 ? reply->activity_tasks(0)
                                                              : v1::PollActivityTaskResponse();
  }

  Result<v1::CompleteActivityResponse> complete_activity(const std::string& token, const std::string& eager_queue,
                                                         bool hold = false) {
    v1::CompleteActivityRequest done;
    done.set_task_token(token);
    done.set_identity("w1");
    done.mutable_result()->add_payloads()->set_data("Hello, world!");
    done.set_eager_workflow_task_queue(eager_queue);
    done.set_hold_with_workflow_task(hold);
    return call(&Engine::complete_activity, done);
  }

  // The hello workflow's second task as the sticky queue would have given
  // it to worker w1: the events after its first task.
  void expect_second_task_of_hello(const v1::PollWorkflowTaskResponse& task) {
    EXPECT_EQ(task.previous_started_event_id(), 3);
    EXPECT_EQ(task.started_event_id(), 9);
    const std::vector<v1::EventType> sticky_history = {
        v1::EVENT_TYPE_WORKFLOW_TASK_COMPLETED, v1::EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
        v1::EVENT_TYPE_ACTIVITY_TASK_STARTED,   v1::EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
        v1::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, v1::EVENT_TYPE_WORKFLOW_TASK_STARTED};
    ASSERT_EQ(types(task.history()), sticky_history);
    for (int i = 0; i < task.history().events_size(); ++i) EXPECT_EQ(task.history().events(i).event_id(), 4 + i);
    EXPECT_EQ(task.history().events(3).activity_task_completed().result().payloads(0).data(), "Hello, world!");
    EXPECT_EQ(task.history().events(5).workflow_task_started().identity(), "w1");
  }

  // The run's history as stored (GetHistory reads only what is committed).
  std::vector<v1::EventType> stored(const std::string& id) {
    v1::GetHistoryRequest r;
    r.mutable_workflow_execution()->set_workflow_id(id);
    auto h = call(&Engine::get_history, r);
    EXPECT_TRUE(h.is_ok()) << h.status().to_string();
    return h.is_ok() ? types(h->history()) : std::vector<v1::EventType>();
  }

  // The held change of a hello run is stored: its history runs up to the
  // second task's start, with the activity's result before it.
  void expect_held_change_stored(const std::string& id) {
    const std::vector<v1::EventType> history = stored(id);
    ASSERT_EQ(history.size(), 9u);
    EXPECT_EQ(history[6], v1::EVENT_TYPE_ACTIVITY_TASK_COMPLETED);
    EXPECT_EQ(history[8], v1::EVENT_TYPE_WORKFLOW_TASK_STARTED);
  }

  // The whole hello history, ids 1 to 11 in order, the result once.
  void expect_hello_history(const std::string& id) {
    v1::GetHistoryRequest r;
    r.mutable_workflow_execution()->set_workflow_id(id);
    auto h = call(&Engine::get_history, r);
    ASSERT_TRUE(h.is_ok()) << h.status().to_string();
    using E = v1::EventType;
    EXPECT_EQ(types(h->history()),
              (std::vector<E>{E::EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, E::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
                              E::EVENT_TYPE_WORKFLOW_TASK_STARTED, E::EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
                              E::EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, E::EVENT_TYPE_ACTIVITY_TASK_STARTED,
                              E::EVENT_TYPE_ACTIVITY_TASK_COMPLETED, E::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
                              E::EVENT_TYPE_WORKFLOW_TASK_STARTED, E::EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
                              E::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED}));
    for (int i = 0; i < h->history().events_size(); ++i) EXPECT_EQ(h->history().events(i).event_id(), i + 1);
  }

  std::vector<v1::EventType> types(const v1::History& history) {
    std::vector<v1::EventType> out;
    for (const auto& e : history.events()) out.push_back(e.event_type());
    return out;
  }

  // A poll of `queue` with a short timeout: empty when nothing is queued.
  bool queue_empty(const std::string& queue) { return poll_workflow(queue).task_token().empty(); }

  int64_t transitions() { return store_->storage_stats().writes.transitions; }
};

TEST_F(EagerWorkflowTaskTest, AnActivityResultForTheStickyWorkerStartsItsNextTaskInTheSameTransition) {
  auto activity = start_and_schedule("taken");
  ASSERT_FALSE(activity.task_token().empty());
  const int64_t before = transitions();
  auto reply = complete_activity(activity.task_token(), kSticky);
  ASSERT_TRUE(reply.is_ok()) << reply.status().to_string();
  EXPECT_EQ(transitions() - before, 1) << "the result and the task's schedule and start are one transition";
  const v1::PollWorkflowTaskResponse& task = reply->workflow_task();
  ASSERT_FALSE(task.task_token().empty()) << "the next workflow task came back in the reply";
  EXPECT_EQ(task.workflow_execution().workflow_id(), "taken");
  expect_second_task_of_hello(task);
  EXPECT_TRUE(queue_empty(kSticky)) << "no task was queued for a poll";
  EXPECT_TRUE(queue_empty("greetings"));

  ASSERT_TRUE(complete(task.task_token(), {complete_with("Hello, world!")}).is_ok());
  EXPECT_EQ(wait_for_close("taken").event_type(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
}

TEST_F(EagerWorkflowTaskTest, NotTakenWhenTheWorkerDidNotAskOrTheStickyQueueIsAnotherWorkers) {
  for (const std::string asked : {"", "greetings/w2"}) {
    const std::string id = "not-taken-" + std::to_string(asked.size());
    auto activity = start_and_schedule(id);
    auto reply = complete_activity(activity.task_token(), asked);
    ASSERT_TRUE(reply.is_ok()) << reply.status().to_string();
    EXPECT_TRUE(reply->workflow_task().task_token().empty()) << "asked as '" << asked << "'";
    auto polled = poll_workflow(kSticky);
    ASSERT_FALSE(polled.task_token().empty()) << "the task went to the sticky queue as usual";
    ASSERT_TRUE(complete(polled.task_token(), {complete_with("done")}).is_ok());
  }
}

TEST_F(EagerWorkflowTaskTest, NotTakenWhenATaskIsAlreadyScheduledBecauseASignalArrived) {
  auto activity = start_and_schedule("signaled");
  v1::SignalWorkflowRequest signal;
  signal.mutable_workflow_execution()->set_workflow_id("signaled");
  signal.set_signal_name("poke");
  ASSERT_TRUE(call(&Engine::signal_workflow, signal).is_ok());
  auto reply = complete_activity(activity.task_token(), kSticky);
  ASSERT_TRUE(reply.is_ok()) << reply.status().to_string();
  EXPECT_TRUE(reply->workflow_task().task_token().empty()) << "the task the signal scheduled is queued already";
  auto polled = poll_workflow(kSticky);
  ASSERT_FALSE(polled.task_token().empty());
  std::vector<v1::EventType> seen = types(polled.history());
  EXPECT_NE(std::find(seen.begin(), seen.end(), v1::EVENT_TYPE_ACTIVITY_TASK_COMPLETED), seen.end())
      << "the queued task brings the activity's result too";
}

// The reply is lost (the worker died holding the task): the task is started,
// so its start-to-close timeout (10 s) times it out and a new attempt goes to
// the normal queue, from full history, as for a polled task whose worker died.
TEST_F(EagerWorkflowTaskTest, AnEagerTaskWhoseWorkerDiedTimesOutAndIsRedelivered) {
  auto activity = start_and_schedule("lost");
  auto reply = complete_activity(activity.task_token(), kSticky);
  ASSERT_TRUE(reply.is_ok());
  const std::string lost = reply->workflow_task().task_token();
  ASSERT_FALSE(lost.empty());
  restart();
  EXPECT_TRUE(queue_empty("greetings")) << "the task is running, as far as the engine knows";
  for (int i = 0; i < 11; ++i) {
    clock_.advance(1s);
    engine_->check_timers();
    std::this_thread::sleep_for(20ms);
  }
  // The timeout is committed on the timer thread, which a loaded machine's
  // fsync can hold past one poll (300 ms): polled again, up to 9 s.
  auto again = poll_workflow("greetings");
  for (int i = 0; i < 30 && again.task_token().empty(); ++i) again = poll_workflow("greetings");
  ASSERT_FALSE(again.task_token().empty()) << "the timed-out task is given to any worker";
  EXPECT_EQ(again.attempt(), 2);
  EXPECT_EQ(again.history().events(0).event_type(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_STARTED) << "full history";
  EXPECT_FALSE(complete(lost, {complete_with("twice")}).is_ok()) << "the lost task's answer is refused";
  ASSERT_TRUE(complete(again.task_token(), {complete_with("once")}).is_ok());
  v1::HistoryEvent closed = wait_for_close("lost");
  EXPECT_EQ(closed.workflow_execution_completed().result().payloads(0).data(), "once");
}

// CompleteActivityRequest.hold_with_workflow_task (docs/engine.md,
// "Activity results held with their workflow task"): the result and the
// task it wakes are held in memory and commit with that task's completion.
TEST_F(EagerWorkflowTaskTest, AHeldResultCommitsWithItsTasksCompletionInOneTransition) {
  auto activity = start_and_schedule("held");
  ASSERT_FALSE(activity.task_token().empty());
  const std::vector<v1::EventType> before_result = stored("held");
  const int64_t before = transitions();
  auto reply = complete_activity(activity.task_token(), kSticky, true);
  ASSERT_TRUE(reply.is_ok()) << reply.status().to_string();
  EXPECT_TRUE(reply->result_held());
  EXPECT_EQ(transitions(), before) << "nothing committed for the result";
  EXPECT_EQ(stored("held"), before_result) << "nothing of the result stored";
  const v1::PollWorkflowTaskResponse& task = reply->workflow_task();
  ASSERT_FALSE(task.task_token().empty());
  // As a committed hand-out shows it: the stored events after the worker's
  // last task, then the held ones.
  expect_second_task_of_hello(task);
  EXPECT_TRUE(queue_empty(kSticky));

  ASSERT_TRUE(complete(task.task_token(), {complete_with("Hello, world!")}).is_ok());
  EXPECT_EQ(transitions() - before, 1) << "the result, the task and its completion: one transition";
  EXPECT_EQ(wait_for_close("held").event_type(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
  expect_hello_history("held");
}

TEST_F(EagerWorkflowTaskTest, AResultIsNotHeldWithoutTheAskOrTheTaskOrWithMaxHeldStartZero) {
  // Asked for the task without the hold: committed as before.
  auto activity = start_and_schedule("unasked");
  int64_t before = transitions();
  auto reply = complete_activity(activity.task_token(), kSticky, false);
  ASSERT_TRUE(reply.is_ok()) << reply.status().to_string();
  EXPECT_FALSE(reply->result_held());
  EXPECT_EQ(transitions() - before, 1);
  ASSERT_TRUE(complete(reply->workflow_task().task_token(), {complete_with("done")}).is_ok());

  // The hold without a task for this worker (its sticky queue is another's): committed.
  activity = start_and_schedule("no-task");
  before = transitions();
  reply = complete_activity(activity.task_token(), "greetings/w2", true);
  ASSERT_TRUE(reply.is_ok()) << reply.status().to_string();
  EXPECT_FALSE(reply->result_held());
  EXPECT_TRUE(reply->workflow_task().task_token().empty());
  EXPECT_EQ(transitions() - before, 1);
  auto polled = poll_workflow(kSticky);
  ASSERT_FALSE(polled.task_token().empty());
  ASSERT_TRUE(complete(polled.task_token(), {complete_with("done")}).is_ok());

  // --max-held-start 0: every change is committed before it is answered.
  restart([](EngineOptions& o) { o.max_held_start = 0ms; });
  activity = start_and_schedule("never-held");
  before = transitions();
  reply = complete_activity(activity.task_token(), kSticky, true);
  ASSERT_TRUE(reply.is_ok()) << reply.status().to_string();
  EXPECT_FALSE(reply->result_held());
  EXPECT_FALSE(reply->workflow_task().task_token().empty()) << "still handed out, committed";
  EXPECT_EQ(transitions() - before, 1);
  ASSERT_TRUE(complete(reply->workflow_task().task_token(), {complete_with("Hello, world!")}).is_ok());
  expect_hello_history("never-held");
}

// The task's answer never comes: the held result commits on its own once
// held --max-held-start, and the task then runs to its completion.
TEST_F(EagerWorkflowTaskTest, AHeldResultWhoseTaskIsNotAnsweredCommitsAfterMaxHeldStart) {
  restart([](EngineOptions& o) { o.max_held_start = 2s; });
  auto activity = start_and_schedule("slow");
  auto reply = complete_activity(activity.task_token(), kSticky, true);
  ASSERT_TRUE(reply.is_ok()) << reply.status().to_string();
  ASSERT_TRUE(reply->result_held());
  EXPECT_EQ(stored("slow").back(), v1::EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
  clock_.advance(3s);
  engine_->check_timers();
  // Committed on the timer thread: looked at again for up to 10 s.
  for (int i = 0; i < 200 && stored("slow").back() != v1::EVENT_TYPE_WORKFLOW_TASK_STARTED; ++i) {
    std::this_thread::sleep_for(50ms);
  }
  expect_held_change_stored("slow");
  // The late answer still completes the task, whose start is now stored.
  ASSERT_TRUE(complete(reply->workflow_task().task_token(), {complete_with("Hello, world!")}).is_ok());
  expect_hello_history("slow");
}

// A crash (here: a restart of the engine, which loses what it held) before
// the task's answer: the result is gone with the task, the task's token is
// refused, and the worker's result, reported again, is recorded once.
TEST_F(EagerWorkflowTaskTest, AHeldResultLostInACrashIsRecordedOnceWhenReportedAgain) {
  auto activity = start_and_schedule("crash");
  auto reply = complete_activity(activity.task_token(), kSticky, true);
  ASSERT_TRUE(reply.is_ok()) << reply.status().to_string();
  ASSERT_TRUE(reply->result_held());
  restart();
  EXPECT_EQ(stored("crash").back(), v1::EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) << "the held result is gone";
  EXPECT_FALSE(complete(reply->workflow_task().task_token(), {complete_with("lost")}).is_ok())
      << "the lost task's answer is refused";
  // What Worker::report_outcome does when the task's answer does not get through.
  auto again = complete_activity(activity.task_token(), "");
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_FALSE(again->result_held());
  auto polled = poll_workflow(kSticky);
  ASSERT_FALSE(polled.task_token().empty()) << "the woken task goes to the sticky queue as usual";
  ASSERT_TRUE(complete(polled.task_token(), {complete_with("Hello, world!")}).is_ok());
  expect_hello_history("crash");
}

// The task's answer is lost on its way and the worker reports the result
// again while the engine still holds it: that report commits it. The same
// token with another result is still refused.
TEST_F(EagerWorkflowTaskTest, AResultReportedAgainWhileStillHeldIsCommittedByThatReport) {
  auto activity = start_and_schedule("again");
  auto reply = complete_activity(activity.task_token(), kSticky, true);
  ASSERT_TRUE(reply.is_ok()) << reply.status().to_string();
  ASSERT_TRUE(reply->result_held());
  v1::CompleteActivityRequest other;
  other.set_task_token(activity.task_token());
  other.mutable_result()->add_payloads()->set_data("another result");
  EXPECT_EQ(call(&Engine::complete_activity, other).status().code(), StatusCode::kNotFound);
  auto again = complete_activity(activity.task_token(), "");
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_FALSE(again->result_held());
  restart();  // what is held is lost; what the report committed is not
  expect_held_change_stored("again");
  ASSERT_TRUE(complete(reply->workflow_task().task_token(), {complete_with("Hello, world!")}).is_ok());
  expect_hello_history("again");
}

// A task whose history is more than one page is not held with its result:
// the next page's token would carry the held events, the result with them,
// past what a token may hold (4 KiB).
TEST_F(EagerWorkflowTaskTest, AResultIsNotHeldWhenItsTasksHistoryIsMoreThanOnePage) {
  ASSERT_TRUE(start("long").is_ok());
  auto first = poll_workflow();
  v1::CompleteWorkflowTaskRequest r;
  r.set_task_token(first.task_token());
  r.set_identity("w1");
  for (int i = 0; i < 1000; ++i) {
    v1::Command marker;
    marker.set_command_type(v1::COMMAND_TYPE_RECORD_MARKER);
    marker.mutable_record_marker()->set_marker_name("m" + std::to_string(i));
    *r.add_commands() = std::move(marker);
  }
  v1::Command c = schedule_greet();
  c.mutable_schedule_activity_task()->set_request_eager_execution(true);
  *r.add_commands() = std::move(c);
  r.mutable_sticky_attributes()->mutable_worker_task_queue()->set_name(kSticky);
  auto scheduled = call(&Engine::complete_workflow_task, r);
  ASSERT_TRUE(scheduled.is_ok()) << scheduled.status().to_string();
  ASSERT_EQ(scheduled->activity_tasks_size(), 1);
  v1::CompleteActivityRequest done;
  done.set_task_token(scheduled->activity_tasks(0).task_token());
  done.set_identity("w1");
  done.mutable_result()->add_payloads()->set_data(std::string(5000, 'x'));
  done.set_eager_workflow_task_queue(kSticky);
  done.set_hold_with_workflow_task(true);
  auto reply = call(&Engine::complete_activity, done);
  ASSERT_TRUE(reply.is_ok()) << reply.status().to_string();
  EXPECT_FALSE(reply->result_held()) << "committed instead";
  ASSERT_FALSE(reply->workflow_task().task_token().empty()) << "and handed out all the same";
  ASSERT_FALSE(reply->workflow_task().next_page_token().empty());
  EXPECT_LE(reply->workflow_task().next_page_token().size(), 4096u);
}

Result<v1::StartWorkflowResponse> start_eagerly(EngineTest& test, const std::string& id,
                                                const std::string& request_id) {
  v1::StartWorkflowRequest r;
  r.set_workflow_id(id);
  r.mutable_workflow_type()->set_name("hello");
  r.mutable_task_queue()->set_name("greetings");
  r.mutable_input()->add_payloads()->set_data("world");
  r.set_request_id(request_id);
  r.set_identity("w1");
  r.set_request_eager_execution(true);
  return test.call(&Engine::start_workflow, r);
}

TEST_F(EagerWorkflowTaskTest, AnEagerStartHandsTheFirstTaskToTheCaller) {
  const int64_t before = transitions();
  auto started = start_eagerly(*this, "eager-start", "s1");
  ASSERT_TRUE(started.is_ok()) << started.status().to_string();
  EXPECT_EQ(transitions() - before, 1);
  const v1::PollWorkflowTaskResponse& task = started->eager_workflow_task();
  ASSERT_FALSE(task.task_token().empty());
  const std::vector<v1::EventType> first = {v1::EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
                                            v1::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
                                            v1::EVENT_TYPE_WORKFLOW_TASK_STARTED};
  EXPECT_EQ(types(task.history()), first);
  EXPECT_EQ(task.history().events(2).workflow_task_started().identity(), "w1");
  EXPECT_TRUE(queue_empty("greetings"));

  // A retried start finds its run: no second task.
  auto again = start_eagerly(*this, "eager-start", "s1");
  ASSERT_TRUE(again.is_ok());
  EXPECT_FALSE(again->started());
  EXPECT_TRUE(again->eager_workflow_task().task_token().empty());

  ASSERT_TRUE(complete(task.task_token(), {complete_with("Hello, world!")}).is_ok());
  EXPECT_EQ(wait_for_close("eager-start").event_type(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);

  // Retried once the run has closed (the id's reuse policy would allow a new
  // run): still the same start, with no task and no second run.
  auto late = start_eagerly(*this, "eager-start", "s1");
  ASSERT_TRUE(late.is_ok()) << late.status().to_string();
  EXPECT_FALSE(late->started());
  EXPECT_EQ(late->run_id(), started->run_id());
  EXPECT_TRUE(late->eager_workflow_task().task_token().empty());
  EXPECT_TRUE(queue_empty("greetings"));
}

TEST_F(EagerWorkflowTaskTest, AStartWithoutTheRequestQueuesItsFirstTask) {
  auto started = start("plain-start");
  ASSERT_TRUE(started.is_ok());
  EXPECT_TRUE(started->eager_workflow_task().task_token().empty());
  EXPECT_FALSE(queue_empty("greetings"));
}

v1::Command continue_as_new() {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION);
  c.mutable_continue_as_new_workflow_execution()->mutable_input()->add_payloads()->set_data("again");
  return c;
}

// A result wait with follow_runs parked on the first run answers once, with
// the close of the run the chain ends in.
TEST_F(EagerWorkflowTaskTest, AResultWaitFollowsContinueAsNewToTheLastRun) {
  auto started = start("chain");
  ASSERT_TRUE(started.is_ok());
  v1::GetHistoryRequest wait;
  wait.mutable_workflow_execution()->set_workflow_id("chain");
  wait.mutable_workflow_execution()->set_run_id(started->run_id());
  wait.set_wait_new_event(true);
  wait.set_close_event_only(true);
  wait.set_follow_runs(true);
  wait.mutable_wait_timeout()->set_seconds(10);
  std::promise<Result<v1::GetHistoryResponse>> answered;
  engine_->get_history(wait, [&answered](Result<v1::GetHistoryResponse> r) { answered.set_value(std::move(r)); });
  auto result = answered.get_future();

  for (int run = 0; run < 2; ++run) {
    auto task = poll_workflow();
    ASSERT_FALSE(task.task_token().empty());
    ASSERT_TRUE(complete(task.task_token(), {continue_as_new()}).is_ok());
  }
  EXPECT_EQ(result.wait_for(200ms), std::future_status::timeout) << "the chain's last run is still open";
  auto last = poll_workflow();
  ASSERT_TRUE(complete(last.task_token(), {complete_with("end")}).is_ok());
  ASSERT_EQ(result.wait_for(5s), std::future_status::ready);
  Result<v1::GetHistoryResponse> out = result.get();
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  ASSERT_EQ(out->history().events_size(), 1);
  EXPECT_EQ(out->history().events(0).event_type(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
  EXPECT_EQ(out->run_id(), last.workflow_execution().run_id());
  EXPECT_NE(out->run_id(), started->run_id());
}

}  // namespace
}  // namespace reprise::engine
