// The engine in process on a real SQLite store, driven through its
// WorkflowService-shaped API the way workers and clients would: the fixture
// the engine's end-to-end tests share.
#pragma once

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "../store/store_test_util.hpp"
#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "engine/store/sqlite_store.hpp"

namespace reprise::engine {

using namespace std::chrono_literals;
using testing::TempDir;

class EngineTest : public ::testing::Test {
 public:
  void SetUp() override {
    log::set_level(log::Level::kWarn);  // keep test output to what matters
    StoreOptions store_options;
    store_options.clock = &clock_;
    auto store = SqliteStore::open(dir_.file("engine.db"), store_options);
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    store_ = std::move(store).value();
    restart();
  }
  void TearDown() override { engine_.reset(); }

  void restart(std::function<void(EngineOptions&)> edit = {}) {
    engine_.reset();
    EngineOptions options;
    options.clock = &clock_;
    options.poll_timeout = 300ms;
    options.random_seed = 42;
    if (edit) edit(options);
    auto engine = Engine::start(engine_store_ != nullptr ? *engine_store_ : *store_, options);
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    engine_ = std::move(engine).value();
  }

  template <typename Resp, typename Req>
  Result<Resp> call(void (Engine::*method)(Req, Reply<Resp>), Req request) {
    std::promise<Result<Resp>> done;
    (engine_.get()->*method)(std::move(request), [&done](Result<Resp> r) { done.set_value(std::move(r)); });
    return done.get_future().get();
  }

  // A poll, with a ticket the test may cancel.
  template <typename Resp, typename Req>
  Result<Resp> call(void (Engine::*method)(Req, Reply<Resp>, std::shared_ptr<PollTicket>), Req request,
                    std::shared_ptr<PollTicket> ticket = nullptr) {
    std::promise<Result<Resp>> done;
    (engine_.get()->*method)(
        std::move(request), [&done](Result<Resp> r) { done.set_value(std::move(r)); }, std::move(ticket));
    return done.get_future().get();
  }

  Result<v1::StartWorkflowResponse> start(const std::string& id, const std::string& request_id = "r1",
                                          v1::WorkflowIdReusePolicy policy = {}) {
    v1::StartWorkflowRequest r;
    r.set_workflow_id(id);
    r.mutable_workflow_type()->set_name("hello");
    r.mutable_task_queue()->set_name("greetings");
    r.mutable_input()->add_payloads()->set_data("world");
    r.set_request_id(request_id);
    r.set_workflow_id_reuse_policy(policy);
    return call(&Engine::start_workflow, r);
  }

  // A signal named "poke" without input: what the task tests need to make a run's history grow.
  Status poke(const std::string& workflow_id) {
    v1::SignalWorkflowRequest s;
    s.mutable_workflow_execution()->set_workflow_id(workflow_id);
    s.set_signal_name("poke");
    return call(&Engine::signal_workflow, s).status();
  }

  v1::PollWorkflowTaskResponse poll_workflow(const std::string& queue = "greetings") {
    v1::PollWorkflowTaskRequest r;
    r.mutable_task_queue()->set_name(queue);
    r.set_identity("test-worker");
    auto out = call(&Engine::poll_workflow_task, r);
    EXPECT_TRUE(out.is_ok()) << out.status().to_string();
    return out.is_ok() ? *out : v1::PollWorkflowTaskResponse();
  }

  v1::PollActivityTaskResponse poll_activity() {
    v1::PollActivityTaskRequest r;
    r.mutable_task_queue()->set_name("greetings");
    auto out = call(&Engine::poll_activity_task, r);
    EXPECT_TRUE(out.is_ok()) << out.status().to_string();
    return out.is_ok() ? *out : v1::PollActivityTaskResponse();
  }

  Status complete(const std::string& token, std::vector<v1::Command> commands) {
    v1::CompleteWorkflowTaskRequest r;
    r.set_task_token(token);
    for (auto& c : commands) *r.add_commands() = std::move(c);
    return call(&Engine::complete_workflow_task, r).status();
  }

  static v1::Command schedule_greet() {
    v1::Command c;
    c.set_command_type(v1::COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK);
    auto* a = c.mutable_schedule_activity_task();
    a->set_activity_id("1");
    a->mutable_activity_type()->set_name("greet");
    a->mutable_start_to_close_timeout()->set_seconds(10);
    a->mutable_input()->add_payloads()->set_data("world");
    return c;
  }

  static v1::Command complete_with(const std::string& result) {
    v1::Command c;
    c.set_command_type(v1::COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION);
    c.mutable_complete_workflow_execution()->mutable_result()->add_payloads()->set_data(result);
    return c;
  }

  // Runs the hello workflow's worker side to completion, from its first task.
  void run_hello_worker_from(const v1::PollWorkflowTaskResponse& task) {
    ASSERT_FALSE(task.task_token().empty());
    ASSERT_TRUE(complete(task.task_token(), {schedule_greet()}).is_ok());
    auto activity = poll_activity();
    ASSERT_EQ(activity.activity_type().name(), "greet");
    ASSERT_EQ(activity.input().payloads_size(), 1) << "the input comes from the scheduled event";
    EXPECT_EQ(activity.input().payloads(0).data(), "world");
    v1::CompleteActivityRequest done;
    done.set_task_token(activity.task_token());
    done.mutable_result()->add_payloads()->set_data("Hello, world!");
    ASSERT_TRUE(call(&Engine::complete_activity, done).is_ok());
    auto second = poll_workflow();
    const auto& events = second.history().events();
    ASSERT_EQ(events.size(), 9);
    EXPECT_EQ(second.previous_started_event_id(), 3);
    ASSERT_EQ(events[6].event_type(), v1::EVENT_TYPE_ACTIVITY_TASK_COMPLETED);
    EXPECT_EQ(events[6].activity_task_completed().result().payloads(0).data(), "Hello, world!");
    ASSERT_TRUE(complete(second.task_token(), {complete_with("Hello, world!")}).is_ok());
  }

  Result<int64_t> describe_length(const std::string& workflow_id) {
    v1::DescribeWorkflowRequest r;
    r.mutable_workflow_execution()->set_workflow_id(workflow_id);
    auto d = call(&Engine::describe_workflow, r);
    if (!d) return d.status();
    return d->info().history_length();
  }

  // Waits for the workflow's close event (of its current run).
  v1::HistoryEvent wait_for_close(const std::string& workflow_id) {
    v1::GetHistoryRequest wait;
    wait.mutable_workflow_execution()->set_workflow_id(workflow_id);
    wait.set_wait_new_event(true);
    wait.set_close_event_only(true);
    wait.mutable_wait_timeout()->set_seconds(10);
    auto r = call(&Engine::get_history, wait);
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    if (!r.is_ok() || r->history().events_size() != 1) {
      ADD_FAILURE() << workflow_id << " did not close";
      return v1::HistoryEvent();
    }
    return r->history().events(0);
  }

  ManualClock clock_;
  TempDir dir_;
  std::unique_ptr<SqliteStore> store_;
  Store* engine_store_ = nullptr;  // a test's wrapper around store_, if set before restart()
  std::unique_ptr<Engine> engine_;
};

}  // namespace reprise::engine
