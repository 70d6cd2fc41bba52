// The execution state machine, driven transition by transition and committed
// to a real SQLite store, as the engine will drive it.
#include "engine/execution/mutable_state.hpp"

#include <gtest/gtest.h>

#include <functional>

#include "../store/store_test_util.hpp"
#include "engine/store/sqlite_store.hpp"
#include "reprise/detail/proto_time.hpp"

namespace reprise::engine {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;
using v1::EventType;

class MutableStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions options;
    options.clock = &clock_;
    auto opened = SqliteStore::open(dir_.file("engine.db"), options);
    ASSERT_TRUE(opened.is_ok()) << opened.status().to_string();
    store_ = std::move(opened).value();
  }

  ExecutionKey key(const std::string& id = "wf") const { return {"default", id, "run-1"}; }

  Status start(const ExecutionKey& k, std::function<void(v1::StartWorkflowRequest&)> edit = {}) {
    v1::StartWorkflowRequest r;
    r.set_workflow_id(k.workflow_id);
    r.mutable_workflow_type()->set_name("checkout");
    r.mutable_task_queue()->set_name("orders");
    r.set_request_id("req-1");
    if (edit) edit(r);
    MutableState ms(k, clock_.now(), config_);
    REPRISE_RETURN_IF_ERROR(ms.start(r));
    Result<Transition> t = ms.finish(codec_);
    if (!t) return t.status();
    t->current_runs.push_back(
        {{k.namespace_id, k.workflow_id, k.run_id, v1::WORKFLOW_EXECUTION_STATUS_RUNNING, "req-1"}, ""});
    return store_->commit(std::move(*t)).status();
  }

  // Loads the execution, runs `op` on it and commits what it changed (with
  // `extra` rows removed), as one transition.
  Status apply(const ExecutionKey& k, const std::function<Status(MutableState&)>& op,
               std::function<void(Transition&)> extra = {}) {
    Result<ExecutionRecord> rec = store_->get_execution(k);
    if (!rec) return rec.status();
    Result<MutableState> ms = MutableState::load(*rec, clock_.now(), config_);
    if (!ms) return ms.status();
    ms->set_run_id_source([this] { return "run-" + std::to_string(++runs_made_); });
    REPRISE_RETURN_IF_ERROR(op(*ms));
    Result<Transition> t = ms->finish(codec_);
    if (!t) return t.status();
    if (extra) extra(*t);
    return store_->commit(std::move(*t)).status();
  }

  // Takes the oldest pending task of `kind` the way a poll does: start it and
  // remove its row in one transition. Returns the task token.
  std::string take(TaskKind kind, const std::string& identity = "worker-1") {
    auto tasks = store_->load_tasks(0, 1000);
    for (const TaskRecord& task : *tasks) {
      if (task.kind != kind) continue;
      internal::TaskPayload payload;
      payload.ParseFromString(task.payload);
      std::string token;
      Status s = apply(
          task.execution,
          [&](MutableState& ms) -> Status {
            if (kind == TaskKind::kWorkflowTask) {
              v1::PollWorkflowTaskResponse r;
              Result<Applied> a = ms.start_workflow_task(payload, identity, r);
              if (!a) return a.status();
              token = r.task_token();
              last_workflow_poll_ = r;
            } else {
              v1::PollActivityTaskResponse r;
              Result<Applied> a = ms.start_activity(payload, identity, r);
              if (!a) return a.status();
              token = r.task_token();
              last_activity_poll_ = r;
            }
            return Status::ok();
          },
          [&](Transition& t) { t.remove_tasks.push_back(task.task_id); });
      EXPECT_TRUE(s.is_ok()) << s.to_string();
      return token;
    }
    ADD_FAILURE() << "no pending task of that kind";
    return "";
  }

  size_t pending(TaskKind kind) {
    size_t n = 0;
    for (const auto& t : *store_->load_tasks(0, 1000)) n += t.kind == kind ? 1 : 0;
    return n;
  }

  Status complete(const std::string& token, std::vector<v1::Command> commands) {
    auto decoded = config_.task_tokens->decode(token);
    if (!decoded) return decoded.status();
    v1::CompleteWorkflowTaskRequest r;
    for (auto& c : commands) *r.add_commands() = std::move(c);
    r.set_identity("worker-1");
    Status answer;  // what the worker is told once the completion is committed
    REPRISE_RETURN_IF_ERROR(apply(key_of(*decoded), [&](MutableState& ms) {
      Result<MutableState::CompletionAnswer> completed = ms.complete_workflow_task(*decoded, r);
      if (!completed) return completed.status();
      answer = completed->status;
      return Status::ok();
    }));
    return answer;
  }

  Status complete_activity(const std::string& token, const std::string& result) {
    auto decoded = config_.task_tokens->decode(token);
    v1::Payloads p;
    p.add_payloads()->set_data(result);
    return apply(key_of(*decoded), [&](MutableState& ms) { return ms.complete_activity(*decoded, p, "worker-1"); });
  }

  Status fail_activity(const std::string& token, v1::Failure failure, const std::string& details = "") {
    auto decoded = config_.task_tokens->decode(token);
    v1::Payloads d;
    if (!details.empty()) d.add_payloads()->set_data(details);
    return apply(key_of(*decoded),
                 [&](MutableState& ms) { return ms.fail_activity(*decoded, failure, d, "worker-1"); });
  }

  // Fires every timer due by now, dropping stale ones, like the timer queue.
  int fire_due_timers() {
    int applied = 0;
    for (const TimerRecord& timer : *store_->due_timers(clock_.now(), 1000)) {
      internal::TimerTask task;
      task.ParseFromString(timer.payload);
      Applied outcome = Applied::kStale;
      Status s = apply(
          timer.execution,
          [&](MutableState& ms) -> Status {
            Result<Applied> a = ms.fire_timer(task);
            if (!a) return a.status();
            outcome = *a;
            return Status::ok();
          },
          [&](Transition& t) { t.remove_timers.push_back(timer.timer_id); });
      EXPECT_TRUE(s.is_ok()) << s.to_string();
      applied += outcome == Applied::kYes ? 1 : 0;
    }
    return applied;
  }

  static ExecutionKey key_of(const internal::TaskToken& t) { return {t.namespace_(), t.workflow_id(), t.run_id()}; }

  v1::History history(const ExecutionKey& k) {
    v1::History h;
    for (const auto& b : *store_->read_history(k, 1, 1000)) {
      Status s = codec_.decode(b.data, h);
      EXPECT_TRUE(s.is_ok()) << s.to_string();
    }
    return h;
  }

  std::vector<EventType> types(const ExecutionKey& k) {
    std::vector<EventType> out;
    const v1::History h = history(k);
    for (const auto& e : h.events()) out.push_back(e.event_type());
    return out;
  }

  internal::ExecutionState state(const ExecutionKey& k) {
    internal::ExecutionState s;
    s.ParseFromString(store_->get_execution(k)->state);
    return s;
  }

  static v1::Command schedule_activity(const std::string& id,
                                       std::function<void(v1::ScheduleActivityTaskCommandAttributes&)> edit = {}) {
    v1::Command c;
    c.set_command_type(v1::COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK);
    auto* a = c.mutable_schedule_activity_task();
    a->set_activity_id(id);
    a->mutable_activity_type()->set_name("charge_card");
    a->mutable_start_to_close_timeout()->set_seconds(30);
    a->mutable_input()->add_payloads()->set_data("order-1");
    if (edit) edit(*a);
    return c;
  }

  static v1::Command complete_workflow(const std::string& result) {
    v1::Command c;
    c.set_command_type(v1::COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION);
    c.mutable_complete_workflow_execution()->mutable_result()->add_payloads()->set_data(result);
    return c;
  }

  static v1::Command start_timer(const std::string& id, int seconds) {
    v1::Command c;
    c.set_command_type(v1::COMMAND_TYPE_START_TIMER);
    c.mutable_start_timer()->set_timer_id(id);
    c.mutable_start_timer()->mutable_start_to_fire_timeout()->set_seconds(seconds);
    return c;
  }

  static v1::Failure failure(const std::string& message, bool non_retryable = false) {
    v1::Failure f;
    f.set_kind(v1::FAILURE_KIND_APPLICATION);
    f.set_message(message);
    f.set_non_retryable(non_retryable);
    return f;
  }

  ManualClock clock_;
  TempDir dir_;
  EngineConfig config_;
  history::EventBatchCodec codec_;
  std::unique_ptr<SqliteStore> store_;
  v1::PollWorkflowTaskResponse last_workflow_poll_;
  v1::PollActivityTaskResponse last_activity_poll_;
  int runs_made_ = 1;  // run-1 is the first run
};

using E = v1::EventType;

TEST_F(MutableStateTest, HelloWorkflowFromStartToCompletion) {
  const auto k = key();
  ASSERT_TRUE(start(k).is_ok());
  EXPECT_EQ(types(k),
            (std::vector<EventType>{E::EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, E::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED}));
  ASSERT_EQ(pending(TaskKind::kWorkflowTask), 1u);

  const std::string wft = take(TaskKind::kWorkflowTask);
  EXPECT_EQ(last_workflow_poll_.started_event_id(), 3);
  EXPECT_EQ(last_workflow_poll_.previous_started_event_id(), 0);
  EXPECT_EQ(last_workflow_poll_.workflow_type().name(), "checkout");
  EXPECT_EQ(pending(TaskKind::kWorkflowTask), 0u);
  ASSERT_TRUE(complete(wft, {schedule_activity("1")}).is_ok());
  ASSERT_EQ(pending(TaskKind::kActivityTask), 1u);

  const std::string at = take(TaskKind::kActivityTask);
  EXPECT_EQ(last_activity_poll_.activity_id(), "1");
  EXPECT_EQ(last_activity_poll_.attempt(), 1);
  EXPECT_EQ(last_activity_poll_.start_to_close_timeout().seconds(), 30);
  ASSERT_TRUE(complete_activity(at, "receipt-9").is_ok());

  const std::string wft2 = take(TaskKind::kWorkflowTask);
  EXPECT_EQ(last_workflow_poll_.previous_started_event_id(), 3);
  ASSERT_TRUE(complete(wft2, {complete_workflow("done")}).is_ok());

  EXPECT_EQ(types(k),
            (std::vector<EventType>{E::EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, E::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
                                    E::EVENT_TYPE_WORKFLOW_TASK_STARTED, E::EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
                                    E::EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, E::EVENT_TYPE_ACTIVITY_TASK_STARTED,
                                    E::EVENT_TYPE_ACTIVITY_TASK_COMPLETED, E::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
                                    E::EVENT_TYPE_WORKFLOW_TASK_STARTED, E::EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
                                    E::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED}));
  const v1::History h = history(k);
  EXPECT_EQ(h.events(6).activity_task_completed().started_event_id(), 6);
  EXPECT_EQ(h.events(6).activity_task_completed().scheduled_event_id(), 5);
  EXPECT_EQ(h.events(10).workflow_execution_completed().workflow_task_completed_event_id(), 10);

  EXPECT_EQ(store_->get_execution(k)->status, v1::WORKFLOW_EXECUTION_STATUS_COMPLETED);
  EXPECT_EQ(store_->get_current_run("default", "wf")->status, v1::WORKFLOW_EXECUTION_STATUS_COMPLETED);
  VisibilityQuery q;
  q.namespace_id = "default";
  auto listed = store_->list_executions(q);
  ASSERT_EQ(listed->records.size(), 1u);
  EXPECT_TRUE(listed->records[0].close_time.has_value());
  const auto s = state(k);
  EXPECT_EQ(s.history_events(), 11);
  EXPECT_EQ(s.history_bytes(), static_cast<int64_t>(h.ByteSizeLong()));
}

TEST_F(MutableStateTest, StaleForgedAndMisdirectedTokensAreRejected) {
  const auto k = key();
  ASSERT_TRUE(start(k).is_ok());
  const std::string wft = take(TaskKind::kWorkflowTask);
  ASSERT_TRUE(complete(wft, {schedule_activity("1")}).is_ok());
  Status again = complete(wft, {});
  EXPECT_EQ(again.code(), StatusCode::kNotFound);
  EXPECT_EQ(again.message(), "stale or unknown task token: no workflow task is running");

  auto forged = *config_.task_tokens->decode(wft);
  forged.set_attempt(7);
  EXPECT_EQ(complete(config_.task_tokens->encode(forged), {}).code(), StatusCode::kNotFound);
  EXPECT_EQ(complete("not a token", {}).message(), "task_token is malformed");

  const std::string at = take(TaskKind::kActivityTask);
  EXPECT_EQ(complete(at, {}).message(), "task_token belongs to an activity task");
  ASSERT_TRUE(complete_activity(at, "ok").is_ok());
  EXPECT_EQ(complete_activity(at, "twice").message(),
            "stale or unknown task token: the activity it names is no longer pending");
}

TEST_F(MutableStateTest, MalformedCommandsAreRefusedNamingTheProblem) {
  const auto k = key();
  ASSERT_TRUE(start(k).is_ok());
  const std::string wft = take(TaskKind::kWorkflowTask);
  auto no_timeout = schedule_activity("a", [](auto& a) { a.clear_start_to_close_timeout(); });
  EXPECT_EQ(complete(wft, {no_timeout}).message(),
            "command 0 (schedule activity 'a'): start_to_close_timeout or schedule_to_close_timeout is required");
  EXPECT_EQ(complete(wft, {schedule_activity("a"), schedule_activity("a")}).message(),
            "command 1 (schedule activity 'a'): activity_id is already used by a pending activity");
  EXPECT_EQ(complete(wft, {start_timer("t", -5)}).message(),
            "command 0 (START_TIMER): start_to_fire_timeout must be positive");
  EXPECT_EQ(complete(wft, {complete_workflow("x"), start_timer("t", 5)}).message(),
            "command 1 (START_TIMER) follows a command that closed the workflow");
  v1::Command cancel_unknown;
  cancel_unknown.set_command_type(v1::COMMAND_TYPE_CANCEL_TIMER);
  cancel_unknown.mutable_cancel_timer()->set_timer_id("nope");
  EXPECT_EQ(complete(wft, {cancel_unknown}).message(), "command 0 (CANCEL_TIMER): timer 'nope' is not running");
  v1::Command mismatched = start_timer("t", 5);
  mismatched.set_command_type(v1::COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK);
  EXPECT_EQ(complete(wft, {mismatched}).message(),
            "command 0 (SCHEDULE_ACTIVITY_TASK): command_type does not match its attributes (start_timer)");
  v1::Command empty;
  EXPECT_EQ(complete(wft, {empty}).message(), "command 0 (UNSPECIFIED): the command has no attributes");
  // Nothing of the refused completions was written; the task still runs.
  EXPECT_EQ(types(k).size(), 3u);
  ASSERT_TRUE(complete(wft, {schedule_activity("a")}).is_ok());
}

TEST_F(MutableStateTest, FailedActivityIsRetriedWithBackoffWithoutGrowingHistory) {
  const auto k = key();
  ASSERT_TRUE(start(k).is_ok());
  ASSERT_TRUE(complete(take(TaskKind::kWorkflowTask),
                       {schedule_activity("1",
                                          [](auto& a) {
                                            a.mutable_retry_policy()->mutable_initial_interval()->set_seconds(2);
                                            a.mutable_retry_policy()->set_maximum_attempts(3);
                                          })})
                  .is_ok());
  const size_t events_before = types(k).size();
  ASSERT_TRUE(fail_activity(take(TaskKind::kActivityTask), failure("card declined"), "progress-1").is_ok());
  EXPECT_EQ(types(k).size(), events_before) << "retries do not grow history";
  EXPECT_EQ(pending(TaskKind::kActivityTask), 0u);

  clock_.advance(1s);
  EXPECT_EQ(fire_due_timers(), 0) << "backoff is 2s";
  clock_.advance(1s);
  EXPECT_EQ(fire_due_timers(), 1);
  const std::string second = take(TaskKind::kActivityTask);
  EXPECT_EQ(last_activity_poll_.attempt(), 2);
  EXPECT_EQ(last_activity_poll_.heartbeat_details().payloads(0).data(), "progress-1");

  ASSERT_TRUE(fail_activity(second, failure("card declined")).is_ok());
  clock_.advance(4s);  // 2s * 2
  EXPECT_EQ(fire_due_timers(), 1);
  ASSERT_TRUE(fail_activity(take(TaskKind::kActivityTask), failure("card declined for good")).is_ok());

  const v1::History h = history(k);
  const auto& started = h.events(h.events_size() - 3);
  const auto& failed = h.events(h.events_size() - 2);
  EXPECT_EQ(started.activity_task_started().attempt(), 3);
  EXPECT_EQ(started.activity_task_started().last_failure().message(), "card declined");
  EXPECT_EQ(failed.activity_task_failed().failure().message(), "card declined for good");
  EXPECT_EQ(h.events(h.events_size() - 1).event_type(), E::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED);
}

TEST_F(MutableStateTest, NonRetryableFailuresCloseTheActivityAtOnce) {
  const auto k = key();
  ASSERT_TRUE(start(k).is_ok());
  ASSERT_TRUE(
      complete(take(TaskKind::kWorkflowTask),
               {schedule_activity(
                    "1", [](auto& a) { a.mutable_retry_policy()->add_non_retryable_error_types("InvalidCard"); }),
                schedule_activity("2")})
          .is_ok());
  v1::Failure typed = failure("bad card number");
  typed.set_type("InvalidCard");
  ASSERT_TRUE(fail_activity(take(TaskKind::kActivityTask), typed).is_ok());
  ASSERT_TRUE(fail_activity(take(TaskKind::kActivityTask), failure("fatal", true)).is_ok());
  int failed = 0;
  for (auto t : types(k)) failed += t == E::EVENT_TYPE_ACTIVITY_TASK_FAILED ? 1 : 0;
  EXPECT_EQ(failed, 2);
}

TEST_F(MutableStateTest, ActivityTimeoutsRetryThenTimeOut) {
  const auto k = key();
  ASSERT_TRUE(start(k).is_ok());
  ASSERT_TRUE(
      complete(take(TaskKind::kWorkflowTask), {schedule_activity("1",
                                                                 [](auto& a) {
                                                                   a.mutable_start_to_close_timeout()->set_seconds(10);
                                                                   a.mutable_retry_policy()->set_maximum_attempts(2);
                                                                 })})
          .is_ok());
  take(TaskKind::kActivityTask);  // the worker takes it and vanishes
  clock_.advance(10s);
  EXPECT_EQ(fire_due_timers(), 1);
  clock_.advance(1s);
  EXPECT_EQ(fire_due_timers(), 1);  // the retry
  const std::string late = take(TaskKind::kActivityTask);
  clock_.advance(10s);
  EXPECT_EQ(fire_due_timers(), 1);
  EXPECT_EQ(complete_activity(late, "too late").code(), StatusCode::kNotFound);
  const v1::History h = history(k);
  const auto& timed_out = h.events(h.events_size() - 2).activity_task_timed_out();
  EXPECT_EQ(timed_out.failure().kind(), v1::FAILURE_KIND_TIMEOUT);
  EXPECT_EQ(timed_out.failure().timeout_type(), v1::TIMEOUT_TYPE_START_TO_CLOSE);
  EXPECT_EQ(timed_out.failure().cause().timeout_type(), v1::TIMEOUT_TYPE_START_TO_CLOSE) << "the last failure";
}

TEST_F(MutableStateTest, HeartbeatsKeepAnActivityAlive) {
  const auto k = key();
  ASSERT_TRUE(start(k).is_ok());
  ASSERT_TRUE(complete(take(TaskKind::kWorkflowTask),
                       {schedule_activity("1",
                                          [](auto& a) {
                                            a.mutable_start_to_close_timeout()->set_seconds(3600);
                                            a.mutable_heartbeat_timeout()->set_seconds(10);
                                            a.mutable_retry_policy()->set_maximum_attempts(1);
                                          })})
                  .is_ok());
  const std::string at = take(TaskKind::kActivityTask);
  auto token = *config_.task_tokens->decode(at);
  for (int i = 0; i < 3; ++i) {
    clock_.advance(8s);
    v1::Payloads details;
    details.add_payloads()->set_data("step " + std::to_string(i));
    ASSERT_TRUE(apply(k, [&](MutableState& ms) { return ms.heartbeat_activity(token, details).status(); }).is_ok());
    fire_due_timers();
  }
  EXPECT_EQ(state(k).activities().size(), 1u) << "still running after 24s thanks to heartbeats";
  clock_.advance(11s);
  fire_due_timers();
  fire_due_timers();  // a re-armed check
  EXPECT_EQ(state(k).activities().size(), 0u);
  EXPECT_EQ(types(k)[types(k).size() - 2], E::EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT);
}

TEST_F(MutableStateTest, EventsArrivingDuringAWorkflowTaskWaitForItToComplete) {
  const auto k = key();
  ASSERT_TRUE(start(k).is_ok());
  ASSERT_TRUE(complete(take(TaskKind::kWorkflowTask), {schedule_activity("1"), start_timer("t", 5)}).is_ok());
  const std::string at = take(TaskKind::kActivityTask);
  clock_.advance(5s);  // the timer gets a workflow task running
  ASSERT_EQ(fire_due_timers(), 1);
  const std::string wft = take(TaskKind::kWorkflowTask);
  const size_t before = types(k).size();
  ASSERT_TRUE(complete_activity(at, "paid").is_ok());
  EXPECT_EQ(types(k).size(), before) << "buffered while the task runs";
  EXPECT_EQ(state(k).buffered_events_size(), 2);

  ASSERT_TRUE(complete(wft, {}).is_ok());
  const v1::History h = history(k);
  const int n = h.events_size();
  EXPECT_EQ(h.events(n - 4).event_type(), E::EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
  EXPECT_EQ(h.events(n - 3).event_type(), E::EVENT_TYPE_ACTIVITY_TASK_STARTED);
  EXPECT_EQ(h.events(n - 2).activity_task_completed().started_event_id(), h.events(n - 3).event_id());
  EXPECT_EQ(h.events(n - 1).event_type(), E::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED);
}

TEST_F(MutableStateTest, AWorkflowCannotCloseOverEventsItHasNotSeen) {
  const auto k = key();
  ASSERT_TRUE(start(k).is_ok());
  ASSERT_TRUE(complete(take(TaskKind::kWorkflowTask), {schedule_activity("1"), start_timer("t", 1)}).is_ok());
  const std::string at = take(TaskKind::kActivityTask);
  clock_.advance(1s);
  fire_due_timers();
  const std::string wft = take(TaskKind::kWorkflowTask);
  ASSERT_TRUE(complete_activity(at, "paid").is_ok());
  const Status rejected = complete(wft, {complete_workflow("early")});
  EXPECT_EQ(rejected.code(), StatusCode::kAborted);
  EXPECT_NE(rejected.message().find("2 new event(s) arrived"), std::string::npos) << rejected.to_string();
  EXPECT_EQ(state(k).status(), v1::WORKFLOW_EXECUTION_STATUS_RUNNING);

  // The task failed at once and a fresh one (attempt 1) carries the events.
  const v1::History h = history(k);
  const int n = h.events_size();
  EXPECT_EQ(h.events(n - 4).workflow_task_failed().cause(), v1::WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_EVENTS);
  EXPECT_EQ(h.events(n - 2).event_type(), E::EVENT_TYPE_ACTIVITY_TASK_COMPLETED);
  EXPECT_EQ(h.events(n - 1).workflow_task_scheduled().attempt(), 1);
  ASSERT_TRUE(complete(take(TaskKind::kWorkflowTask), {complete_workflow("paid")}).is_ok());
  EXPECT_EQ(state(k).status(), v1::WORKFLOW_EXECUTION_STATUS_COMPLETED);
}

TEST_F(MutableStateTest, TimersFireAndCanceledOnesStayQuiet) {
  const auto k = key();
  ASSERT_TRUE(start(k).is_ok());
  ASSERT_TRUE(complete(take(TaskKind::kWorkflowTask),
                       {start_timer("short", 5), start_timer("long", 10), schedule_activity("1")})
                  .is_ok());
  ASSERT_TRUE(complete_activity(take(TaskKind::kActivityTask), "done").is_ok());
  v1::Command cancel;
  cancel.set_command_type(v1::COMMAND_TYPE_CANCEL_TIMER);
  cancel.mutable_cancel_timer()->set_timer_id("short");
  ASSERT_TRUE(complete(take(TaskKind::kWorkflowTask), {cancel}).is_ok());

  clock_.advance(10s);
  EXPECT_EQ(fire_due_timers(), 1) << "the canceled timer's row fires stale";
  const v1::History h = history(k);
  int fired = 0, canceled = 0;
  for (const auto& e : h.events()) {
    if (e.has_timer_fired()) {
      ++fired;
      EXPECT_EQ(e.timer_fired().timer_id(), "long");
    }
    canceled += e.has_timer_canceled() ? 1 : 0;
  }
  EXPECT_EQ(fired, 1);
  EXPECT_EQ(canceled, 1);
  EXPECT_EQ(h.events(h.events_size() - 1).event_type(), E::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED);
}

TEST_F(MutableStateTest, WorkflowTaskTimeoutAndFailureAreRetried) {
  const auto k = key();
  ASSERT_TRUE(start(k).is_ok());
  take(TaskKind::kWorkflowTask);  // the worker dies
  clock_.advance(10s);            // default workflow task timeout
  EXPECT_EQ(fire_due_timers(), 1);
  ASSERT_EQ(pending(TaskKind::kWorkflowTask), 1u) << "rescheduled at once";
  const std::string second = take(TaskKind::kWorkflowTask);
  EXPECT_EQ(last_workflow_poll_.attempt(), 2);

  auto token = *config_.task_tokens->decode(second);
  v1::FailWorkflowTaskRequest fail;
  fail.set_cause(v1::WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISM);
  fail.mutable_failure()->set_message("history has ActivityTaskScheduled 'charge', code scheduled 'refund'");
  ASSERT_TRUE(apply(k, [&](MutableState& ms) { return ms.fail_workflow_task(token, fail); }).is_ok());
  EXPECT_EQ(pending(TaskKind::kWorkflowTask), 0u) << "a failed task waits out its backoff";
  EXPECT_EQ(state(k).last_workflow_task_failure().message(), fail.failure().message());
  clock_.advance(2s);  // attempt 3: 1s * 2
  EXPECT_EQ(fire_due_timers(), 1);
  take(TaskKind::kWorkflowTask);
  EXPECT_EQ(last_workflow_poll_.attempt(), 3);
}

TEST_F(MutableStateTest, RetriesOfAFailingWorkflowTaskDoNotGrowHistory) {
  const auto k = key();
  ASSERT_TRUE(start(k).is_ok());
  v1::FailWorkflowTaskRequest fail;
  fail.set_cause(v1::WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_CODE_ERROR);
  fail.mutable_failure()->set_message("null dereference in checkout()");
  auto fail_next = [&] {
    auto token = *config_.task_tokens->decode(take(TaskKind::kWorkflowTask));
    ASSERT_TRUE(apply(k, [&](MutableState& ms) { return ms.fail_workflow_task(token, fail); }).is_ok());
  };
  fail_next();  // the first failure is written
  const size_t length = types(k).size();
  EXPECT_EQ(types(k).back(), E::EVENT_TYPE_WORKFLOW_TASK_FAILED);
  for (int attempt = 2; attempt <= 6; ++attempt) {
    clock_.advance(std::chrono::minutes(1));  // past any backoff so far
    ASSERT_EQ(fire_due_timers(), 1);
    fail_next();
    EXPECT_EQ(last_workflow_poll_.attempt(), attempt);
    const auto& shown = last_workflow_poll_.history();
    ASSERT_EQ(shown.events_size(), 2) << "the worker is shown the retry's own scheduled and started events";
    EXPECT_EQ(shown.events(0).event_id(), static_cast<int64_t>(length) + 1);
    EXPECT_EQ(shown.events(0).workflow_task_scheduled().attempt(), attempt);
    EXPECT_EQ(shown.events(1).event_type(), E::EVENT_TYPE_WORKFLOW_TASK_STARTED);
    EXPECT_EQ(types(k).size(), length) << "attempt " << attempt << " wrote nothing";
  }
  EXPECT_EQ(state(k).workflow_task_attempt(), 7);

  // The attempt that completes writes its events, exactly as the worker saw them.
  clock_.advance(std::chrono::minutes(2));
  ASSERT_EQ(fire_due_timers(), 1);
  const std::string token = take(TaskKind::kWorkflowTask);
  const v1::History shown = last_workflow_poll_.history();
  ASSERT_TRUE(complete(token, {complete_workflow("fixed")}).is_ok());
  const v1::History h = history(k);
  ASSERT_EQ(h.events_size(), static_cast<int>(length) + 4);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(h.events(static_cast<int>(length) + i).SerializeAsString(), shown.events(i).SerializeAsString());
  }
  for (int i = 0; i < h.events_size(); ++i) EXPECT_EQ(h.events(i).event_id(), i + 1);
  EXPECT_EQ(h.events(h.events_size() - 1).event_type(), E::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
}

// A failing workflow task's retries wait 1 s, then twice as long each time,
// at most 10 minutes (EngineConfig::max_workflow_task_backoff).
TEST_F(MutableStateTest, AFailingWorkflowTaskIsRetriedAfterOneSecondDoublingUpToTenMinutes) {
  const auto k = key();
  ASSERT_TRUE(start(k).is_ok());
  v1::FailWorkflowTaskRequest fail;
  fail.set_cause(v1::WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_CODE_ERROR);
  fail.mutable_failure()->set_message("bug");
  std::chrono::milliseconds expected = 1s;
  for (int attempt = 1; attempt <= 12; ++attempt) {
    auto token = *config_.task_tokens->decode(take(TaskKind::kWorkflowTask));
    ASSERT_TRUE(apply(k, [&](MutableState& ms) { return ms.fail_workflow_task(token, fail); }).is_ok());
    clock_.advance(expected - 1ms);
    EXPECT_EQ(fire_due_timers(), 0) << "attempt " << attempt + 1 << " came before " << expected.count() << " ms";
    clock_.advance(1ms);
    ASSERT_EQ(fire_due_timers(), 1) << "attempt " << attempt + 1 << " is due after " << expected.count() << " ms";
    expected = std::min<std::chrono::milliseconds>(expected * 2, std::chrono::minutes(10));
  }
  EXPECT_EQ(expected, std::chrono::minutes(10)) << "the last retries waited the cap";
}

TEST_F(MutableStateTest, ASignalTurnsAWaitingRetryIntoAnOrdinaryTask) {
  const auto k = key();
  ASSERT_TRUE(start(k).is_ok());
  auto token = *config_.task_tokens->decode(take(TaskKind::kWorkflowTask));
  v1::FailWorkflowTaskRequest fail;
  fail.mutable_failure()->set_message("boom");
  ASSERT_TRUE(apply(k, [&](MutableState& ms) { return ms.fail_workflow_task(token, fail); }).is_ok());
  clock_.advance(1s);
  ASSERT_EQ(fire_due_timers(), 1);  // attempt 2 is scheduled, transient
  const size_t length = types(k).size();
  ASSERT_TRUE(apply(k, [](MutableState& ms) { return ms.signal("go", {}, "client", ""); }).is_ok());
  const auto t = types(k);
  ASSERT_EQ(t.size(), length + 2);
  EXPECT_EQ(t[length], E::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED) << "the retry's event is written first, at its id";
  EXPECT_EQ(t[length + 1], E::EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED);
  const std::string retry = take(TaskKind::kWorkflowTask);
  ASSERT_FALSE(retry.empty()) << "the queued task still matches";
  EXPECT_EQ(types(k).back(), E::EVENT_TYPE_WORKFLOW_TASK_STARTED);
  ASSERT_TRUE(complete(retry, {complete_workflow("ok")}).is_ok());
  const v1::History h = history(k);
  for (int i = 0; i < h.events_size(); ++i) EXPECT_EQ(h.events(i).event_id(), i + 1);
}

TEST_F(MutableStateTest, RunTimeoutClosesTheWorkflow) {
  const auto k = key();
  ASSERT_TRUE(start(k, [](auto& r) { r.mutable_workflow_run_timeout()->set_seconds(60); }).is_ok());
  const std::string wft = take(TaskKind::kWorkflowTask);
  clock_.advance(60s);
  fire_due_timers();
  EXPECT_EQ(store_->get_execution(k)->status, v1::WORKFLOW_EXECUTION_STATUS_TIMED_OUT);
  EXPECT_EQ(types(k).back(), E::EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT);
  EXPECT_EQ(complete(wft, {}).code(), StatusCode::kNotFound);
}

// When the server closes a workflow while a workflow task runs, the task is
// failed (FORCE_CLOSE) and the activity result and signal the engine
// acknowledged meanwhile are written before the close event. Terminate and
// the run timeout dropped them (found by the simulator, seed 1890).
TEST_F(MutableStateTest, TerminateWritesWhatArrivedWhileATaskRanBeforeTheCloseEvent) {
  const auto k = key();
  ASSERT_TRUE(start(k).is_ok());
  ASSERT_TRUE(complete(take(TaskKind::kWorkflowTask), {schedule_activity("1"), start_timer("t", 5)}).is_ok());
  const std::string at = take(TaskKind::kActivityTask);
  clock_.advance(5s);  // the timer gets a workflow task running
  ASSERT_EQ(fire_due_timers(), 1);
  const std::string wft = take(TaskKind::kWorkflowTask);
  ASSERT_TRUE(complete_activity(at, "paid").is_ok());
  ASSERT_TRUE(apply(k, [](MutableState& ms) { return ms.signal("go", {}, "client", ""); }).is_ok());
  ASSERT_TRUE(apply(k, [](MutableState& ms) { return ms.terminate("stop", {}, "admin"); }).is_ok());

  const v1::History h = history(k);
  const int n = h.events_size();
  ASSERT_GE(n, 5);
  EXPECT_EQ(h.events(n - 5).event_type(), E::EVENT_TYPE_WORKFLOW_TASK_FAILED);
  EXPECT_EQ(h.events(n - 5).workflow_task_failed().cause(), v1::WORKFLOW_TASK_FAILED_CAUSE_FORCE_CLOSE);
  EXPECT_EQ(h.events(n - 4).event_type(), E::EVENT_TYPE_ACTIVITY_TASK_STARTED);
  EXPECT_EQ(h.events(n - 3).activity_task_completed().started_event_id(), h.events(n - 4).event_id());
  EXPECT_EQ(h.events(n - 2).workflow_execution_signaled().signal_name(), "go");
  EXPECT_EQ(h.events(n - 1).event_type(), E::EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED);
  for (int i = 0; i < n; ++i) EXPECT_EQ(h.events(i).event_id(), i + 1);
  EXPECT_EQ(state(k).buffered_events_size(), 0);
  EXPECT_EQ(complete(wft, {}).code(), StatusCode::kNotFound);
}

TEST_F(MutableStateTest, RunTimeoutWritesWhatArrivedWhileATaskRanBeforeTheCloseEvent) {
  const auto k = key();
  // Shorter than the workflow task's timeout (10 s), so the task still runs.
  ASSERT_TRUE(start(k, [](auto& r) { r.mutable_workflow_run_timeout()->set_seconds(5); }).is_ok());
  const std::string wft = take(TaskKind::kWorkflowTask);
  ASSERT_TRUE(apply(k, [](MutableState& ms) { return ms.signal("go", {}, "client", ""); }).is_ok());
  clock_.advance(5s);
  fire_due_timers();

  const v1::History h = history(k);
  const int n = h.events_size();
  ASSERT_GE(n, 3);
  EXPECT_EQ(h.events(n - 3).workflow_task_failed().cause(), v1::WORKFLOW_TASK_FAILED_CAUSE_FORCE_CLOSE);
  EXPECT_EQ(h.events(n - 2).workflow_execution_signaled().signal_name(), "go");
  EXPECT_EQ(h.events(n - 1).event_type(), E::EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT);
  EXPECT_EQ(complete(wft, {}).code(), StatusCode::kNotFound);
}

TEST_F(MutableStateTest, HistoryOverTheLimitTerminatesTheExecution) {
  config_.history_limits = {.warn_events = 5, .warn_bytes = 1 << 20, .fail_events = 8, .fail_bytes = 2 << 20};
  const auto k = key();
  ASSERT_TRUE(start(k).is_ok());
  ASSERT_TRUE(complete(take(TaskKind::kWorkflowTask), {start_timer("a", 1), start_timer("b", 1), start_timer("c", 1),
                                                       start_timer("d", 1), start_timer("e", 1)})
                  .is_ok());
  EXPECT_EQ(store_->get_execution(k)->status, v1::WORKFLOW_EXECUTION_STATUS_TERMINATED);
  const v1::History h = history(k);
  EXPECT_EQ(h.events(h.events_size() - 1).workflow_execution_terminated().reason(),
            "history has 9 events (limit 8); the execution was terminated");
}

// Events buffered while a task runs count toward the history limits: they
// are history once the task completes.
TEST_F(MutableStateTest, EventsBufferedWhileATaskRunsCountTowardTheHistoryLimit) {
  config_.history_limits = {.warn_events = 5, .warn_bytes = 1 << 20, .fail_events = 8, .fail_bytes = 2 << 20};
  const auto k = key();
  ASSERT_TRUE(start(k).is_ok());
  const std::string wft = take(TaskKind::kWorkflowTask);  // 3 events written
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(apply(k, [](MutableState& ms) { return ms.signal("go", {}, "client", ""); }).is_ok());
  }
  EXPECT_EQ(store_->get_execution(k)->status, v1::WORKFLOW_EXECUTION_STATUS_RUNNING) << "8 events: at the limit";
  EXPECT_EQ(state(k).buffered_events_size(), 5);
  ASSERT_TRUE(apply(k, [](MutableState& ms) { return ms.signal("go", {}, "client", ""); }).is_ok());
  EXPECT_EQ(store_->get_execution(k)->status, v1::WORKFLOW_EXECUTION_STATUS_TERMINATED);
  const v1::History h = history(k);
  EXPECT_EQ(h.events(h.events_size() - 1).workflow_execution_terminated().reason(),
            "history has 9 events (limit 8); the execution was terminated");
  int signals = 0;
  for (const auto& e : h.events()) signals += e.has_workflow_execution_signaled() ? 1 : 0;
  EXPECT_EQ(signals, 6) << "the buffered signals are written before the close";
  EXPECT_EQ(complete(wft, {}).code(), StatusCode::kNotFound);
}

TEST_F(MutableStateTest, CancelingAnActivityThatHasNotStartedCancelsItAtOnce) {
  const auto k = key();
  ASSERT_TRUE(start(k).is_ok());
  ASSERT_TRUE(complete(take(TaskKind::kWorkflowTask), {schedule_activity("1"), start_timer("t", 1)}).is_ok());
  clock_.advance(1s);
  ASSERT_EQ(fire_due_timers(), 1);
  v1::Command cancel;
  cancel.set_command_type(v1::COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK);
  cancel.mutable_request_cancel_activity_task()->set_scheduled_event_id(5);
  ASSERT_TRUE(complete(take(TaskKind::kWorkflowTask), {cancel}).is_ok());
  const auto t = types(k);
  EXPECT_EQ(std::vector<EventType>(t.end() - 4, t.end()),
            (std::vector<EventType>{E::EVENT_TYPE_WORKFLOW_TASK_COMPLETED, E::EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED,
                                    E::EVENT_TYPE_ACTIVITY_TASK_CANCELED, E::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED}));
  EXPECT_EQ(take(TaskKind::kActivityTask), "") << "the queued row is stale now";
  EXPECT_EQ(pending(TaskKind::kActivityTask), 0u);
}

TEST_F(MutableStateTest, CancelingARunningActivityTellsItsHeartbeat) {
  const auto k = key();
  ASSERT_TRUE(start(k).is_ok());
  ASSERT_TRUE(complete(take(TaskKind::kWorkflowTask), {schedule_activity("1"), start_timer("t", 1)}).is_ok());
  const auto token = *config_.task_tokens->decode(take(TaskKind::kActivityTask));
  clock_.advance(1s);
  ASSERT_EQ(fire_due_timers(), 1);
  v1::Command cancel;
  cancel.set_command_type(v1::COMMAND_TYPE_REQUEST_CANCEL_ACTIVITY_TASK);
  cancel.mutable_request_cancel_activity_task()->set_scheduled_event_id(5);
  ASSERT_TRUE(complete(take(TaskKind::kWorkflowTask), {cancel}).is_ok());
  bool cancel_requested = false;
  ASSERT_TRUE(apply(k, [&](MutableState& ms) {
                auto r = ms.heartbeat_activity(token, v1::Payloads());
                if (r) cancel_requested = *r;
                return r.status();
              }).is_ok());
  EXPECT_TRUE(cancel_requested);

  v1::Payloads details;
  details.add_payloads()->set_data("refunded half");
  ASSERT_TRUE(
      apply(k, [&](MutableState& ms) { return ms.report_activity_canceled(token, details, "worker-1"); }).is_ok());
  const v1::History h = history(k);
  const int n = h.events_size();
  EXPECT_EQ(h.events(n - 3).event_type(), E::EVENT_TYPE_ACTIVITY_TASK_STARTED);
  const auto& canceled = h.events(n - 2).activity_task_canceled();
  EXPECT_EQ(canceled.details().payloads(0).data(), "refunded half");
  EXPECT_EQ(canceled.started_event_id(), h.events(n - 3).event_id());
  EXPECT_EQ(h.events(static_cast<int>(canceled.latest_cancel_requested_event_id()) - 1).event_type(),
            E::EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED);
  EXPECT_EQ(h.events(n - 1).event_type(), E::EVENT_TYPE_WORKFLOW_TASK_SCHEDULED);
  EXPECT_TRUE(state(k).activities().empty());
}

TEST_F(MutableStateTest, AnActivityNotAskedToCancelCannotReportCanceled) {
  const auto k = key();
  ASSERT_TRUE(start(k).is_ok());
  ASSERT_TRUE(complete(take(TaskKind::kWorkflowTask), {schedule_activity("1")}).is_ok());
  const auto token = *config_.task_tokens->decode(take(TaskKind::kActivityTask));
  const Status s =
      apply(k, [&](MutableState& ms) { return ms.report_activity_canceled(token, v1::Payloads(), "worker-1"); });
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("was not asked to cancel"), std::string::npos) << s.to_string();
}

TEST_F(MutableStateTest, ContinueAsNewClosesTheRunAndStartsTheNextAtomically) {
  const auto k = key();
  const TimePoint t0 = clock_.now();
  ASSERT_TRUE(start(k, [](v1::StartWorkflowRequest& r) {
                r.mutable_workflow_execution_timeout()->set_seconds(3600);
                r.mutable_workflow_run_timeout()->set_seconds(600);
              }).is_ok());
  clock_.advance(100s);
  v1::Command next;
  next.set_command_type(v1::COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION);
  next.mutable_continue_as_new_workflow_execution()->mutable_input()->add_payloads()->set_data("page 2");
  ASSERT_TRUE(complete(take(TaskKind::kWorkflowTask), {schedule_activity("1"), next}).is_ok());

  EXPECT_EQ(state(k).status(), v1::WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW);
  const v1::History old_history = history(k);
  const auto& closing = old_history.events(old_history.events_size() - 1);
  ASSERT_EQ(closing.event_type(), E::EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW);
  const std::string next_run = closing.workflow_execution_continued_as_new().new_execution_run_id();
  EXPECT_EQ(next_run, "run-2");

  const ExecutionKey k2{k.namespace_id, k.workflow_id, next_run};
  EXPECT_EQ(store_->get_current_run(k.namespace_id, k.workflow_id)->run_id, next_run);
  const v1::History fresh = history(k2);
  ASSERT_EQ(fresh.events_size(), 2) << "a fresh history: started, workflow task scheduled";
  const auto& started = fresh.events(0).workflow_execution_started();
  EXPECT_EQ(started.input().payloads(0).data(), "page 2");
  EXPECT_EQ(started.continued_execution_run_id(), "run-1");
  EXPECT_EQ(started.first_execution_run_id(), "run-1") << "the chain's first run";
  EXPECT_EQ(started.original_execution_run_id(), "run-2") << "its own id, as in Temporal: it seeds random()";
  EXPECT_EQ(started.workflow_type().name(), "checkout") << "unset fields carry over";
  EXPECT_EQ(to_time(started.execution_expiration_time()), t0 + 3600s) << "the execution timeout spans the chain";
  EXPECT_EQ(pending(TaskKind::kActivityTask), 0u) << "the old run's activity row goes with its close";

  // The new run has its own run timeout: 600 s from its start.
  clock_.advance(600s);
  fire_due_timers();
  EXPECT_EQ(state(k2).status(), v1::WORKFLOW_EXECUTION_STATUS_TIMED_OUT);
}

// What a continue-as-new command leaves unset comes from the run that
// continued: task queue, run and task timeouts, retry policy (as in
// Temporal); what it sets replaces it.
TEST_F(MutableStateTest, ContinueAsNewCarriesOverTheQueueTimeoutsAndRetryPolicyItDoesNotSet) {
  v1::RetryPolicy policy;
  policy.mutable_initial_interval()->set_seconds(3);
  policy.set_backoff_coefficient(1.5);
  policy.mutable_maximum_interval()->set_seconds(30);
  policy.set_maximum_attempts(4);
  policy.add_non_retryable_error_types("CardDeclined");
  const auto k = key();
  ASSERT_TRUE(start(k, [&](v1::StartWorkflowRequest& r) {
                r.mutable_workflow_run_timeout()->set_seconds(600);
                r.mutable_workflow_task_timeout()->set_seconds(7);
                *r.mutable_retry_policy() = policy;
              }).is_ok());
  v1::Command same;
  same.set_command_type(v1::COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION);
  same.mutable_continue_as_new_workflow_execution();  // sets nothing
  ASSERT_TRUE(complete(take(TaskKind::kWorkflowTask), {same}).is_ok());

  const ExecutionKey next{k.namespace_id, k.workflow_id, "run-2"};
  ASSERT_EQ(state(k).status(), v1::WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW);
  const v1::History carried = history(next);
  ASSERT_GE(carried.events_size(), 1);
  const auto& started = carried.events(0).workflow_execution_started();
  EXPECT_EQ(started.task_queue().name(), "orders");
  EXPECT_EQ(started.workflow_run_timeout().seconds(), 600);
  EXPECT_EQ(started.workflow_task_timeout().seconds(), 7);
  EXPECT_EQ(started.retry_policy().SerializeAsString(), policy.SerializeAsString())
      << started.retry_policy().DebugString();
  EXPECT_EQ(state(next).task_queue().name(), "orders") << "its tasks go to the same queue";

  // Set in the command, they replace the run's.
  v1::Command changed;
  changed.set_command_type(v1::COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION);
  auto* a = changed.mutable_continue_as_new_workflow_execution();
  a->mutable_task_queue()->set_name("orders-v2");
  a->mutable_workflow_run_timeout()->set_seconds(900);
  a->mutable_workflow_task_timeout()->set_seconds(20);
  a->mutable_retry_policy()->set_maximum_attempts(9);
  ASSERT_TRUE(complete(take(TaskKind::kWorkflowTask), {changed}).is_ok());
  const v1::History replaced = history({k.namespace_id, k.workflow_id, "run-3"});
  ASSERT_GE(replaced.events_size(), 1);
  const auto& restarted = replaced.events(0).workflow_execution_started();
  EXPECT_EQ(restarted.task_queue().name(), "orders-v2");
  EXPECT_EQ(restarted.workflow_run_timeout().seconds(), 900);
  EXPECT_EQ(restarted.workflow_task_timeout().seconds(), 20);
  EXPECT_EQ(restarted.retry_policy().maximum_attempts(), 9);
}

TEST_F(MutableStateTest, ExecutionTimeoutSpansContinueAsNew) {
  const auto k = key();
  ASSERT_TRUE(
      start(k, [](v1::StartWorkflowRequest& r) { r.mutable_workflow_execution_timeout()->set_seconds(60); }).is_ok());
  clock_.advance(50s);
  v1::Command next;
  next.set_command_type(v1::COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION);
  next.mutable_continue_as_new_workflow_execution();  // everything carries over
  const Status continued = complete(take(TaskKind::kWorkflowTask), {next});
  ASSERT_TRUE(continued.is_ok()) << continued.to_string();
  const ExecutionKey k2{k.namespace_id, k.workflow_id, "run-2"};
  clock_.advance(10s);  // 60 s after the first run started
  fire_due_timers();
  EXPECT_EQ(state(k2).status(), v1::WORKFLOW_EXECUTION_STATUS_TIMED_OUT);
  EXPECT_EQ(store_->get_current_run(k.namespace_id, k.workflow_id)->status, v1::WORKFLOW_EXECUTION_STATUS_TIMED_OUT);
}

}  // namespace
}  // namespace reprise::engine
