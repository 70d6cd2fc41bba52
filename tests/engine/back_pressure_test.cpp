// Back-pressure: with a commit held (a slow disk, a busy writer), requests
// beyond the per-workflow queue or the server-wide limit are refused at
// once as retryable RESOURCE_EXHAUSTED instead of queuing without end; the
// admitted ones all commit once the writer moves again, and the engine's
// own work (a due timer) is never refused.
#include "gated_store.hpp"

namespace reprise::engine {
namespace {

class BackPressure : public GatedEngineTest {
 public:
  // A failed assertion must not leave a commit held: shutdown would wait for it.
  void TearDown() override {
    gate_->release();
    GatedEngineTest::TearDown();
  }

 protected:
  // A signal sent without waiting for its answer.
  std::future<Status> send_signal(const std::string& workflow_id, int n) {
    auto done = std::make_shared<std::promise<Status>>();
    v1::SignalWorkflowRequest r;
    r.mutable_workflow_execution()->set_workflow_id(workflow_id);
    r.set_signal_name("note");
    r.set_request_id("note-" + workflow_id + "-" + std::to_string(n));
    engine_->signal_workflow(r, [done](Result<v1::SignalWorkflowResponse> a) { done->set_value(a.status()); });
    return done->get_future();
  }
  // Slots are freed when the answered request's callback is destroyed,
  // just after the answer.
  bool pending_requests_drop_to_zero() {
    for (int i = 0; i < 200 && engine_->pending_requests() > 0; ++i) std::this_thread::sleep_for(10ms);
    return engine_->pending_requests() == 0;
  }
  // Waits until `n` of `pending` have answered and takes those out. Which
  // ones is not fixed: requests reach their workflow's queue from the read
  // pool, in any order.
  static std::vector<Status> take_answered(std::vector<std::future<Status>>& pending, size_t n,
                                           std::chrono::milliseconds limit) {
    std::vector<Status> answered;
    const auto until = std::chrono::steady_clock::now() + limit;
    while (answered.size() < n && std::chrono::steady_clock::now() < until) {
      for (auto it = pending.begin(); it != pending.end();) {
        if (it->wait_for(0ms) == std::future_status::ready) {
          answered.push_back(it->get());
          it = pending.erase(it);
        } else {
          ++it;
        }
      }
      if (answered.size() < n) std::this_thread::sleep_for(5ms);
    }
    return answered;
  }
  static bool answered_within(std::future<Status>& f, std::chrono::milliseconds limit) {
    return f.wait_for(limit) == std::future_status::ready;
  }
  int signals_in_history(const std::string& workflow_id) {
    v1::GetHistoryRequest r;
    r.mutable_workflow_execution()->set_workflow_id(workflow_id);
    auto h = call(&Engine::get_history, r);
    EXPECT_TRUE(h.is_ok()) << h.status().to_string();
    int n = 0;
    for (const auto& e : h->history().events()) n += e.event_type() == v1::EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED;
    return n;
  }
};

// A reply can be destroyed after the engine that admitted it (the store's
// writer clears a finished batch after answering it): its slot must not
// reach into the freed engine. Under ASan or TSan the old slot, which
// pointed at its RequestAdmission, failed here (heap-use-after-free), and
// the engine tests' teardown raced with the writer thread.
TEST(RequestAdmission, ASlotMayBeReleasedAfterItsDoorIsGone) {
  auto door = std::make_unique<RequestAdmission>(1);
  RequestAdmission::Slot slot = door->try_admit();
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ(door->try_admit(), nullptr) << "the one slot is taken";
  door.reset();
  slot.reset();  // touches nothing of the door
  RequestAdmission again(1);
  EXPECT_NE(again.try_admit(), nullptr);
}

TEST_F(BackPressure, RequestsBeyondOneWorkflowsQueueAreRefusedAtOnceAndTheAdmittedAllCommit) {
  restart([](EngineOptions& o) { o.max_waiting_per_execution = 8; });
  ASSERT_TRUE(start("busy").is_ok());
  gate_->hold_next_commit_of("busy");
  std::vector<std::future<Status>> admitted;
  admitted.push_back(send_signal("busy", 0));
  gate_->wait_until_held();
  for (int i = 1; i <= 12; ++i) admitted.push_back(send_signal("busy", i));  // 8 wait behind the held one
  const std::vector<Status> refused = take_answered(admitted, 4, 5s);
  ASSERT_EQ(refused.size(), 4u) << "requests beyond the queue's bound are answered at once, not queued";
  for (const Status& s : refused) {
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
    EXPECT_TRUE(s.retryable()) << "back-pressure, so the caller may send it again";
    EXPECT_NE(s.message().find("--max-waiting-per-execution"), std::string::npos) << s.message();
  }
  for (auto& f : admitted) EXPECT_FALSE(answered_within(f, 0ms)) << "nothing answered before its commit";
  // A refused request answers on the read pool and frees its slot as that
  // job ends, a moment after the answer.
  for (int i = 0; i < 500 && engine_->pending_requests() > 9; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(engine_->pending_requests(), 9u);
  gate_->release();
  for (auto& f : admitted) {
    ASSERT_TRUE(answered_within(f, 10s));
    EXPECT_TRUE(f.get().is_ok());
  }
  EXPECT_EQ(signals_in_history("busy"), 9) << "every admitted signal, each once";
  EXPECT_TRUE(pending_requests_drop_to_zero()) << "a slot is held until its request has answered, then freed";
  EXPECT_TRUE(send_signal("busy", 13).get().is_ok()) << "room again once the queue drained";
}

TEST_F(BackPressure, TheServerWideLimitRefusesRequestsForAnyWorkflow) {
  restart([](EngineOptions& o) { o.max_pending_requests = 5; });
  ASSERT_TRUE(start("held").is_ok());
  ASSERT_TRUE(start("idle").is_ok());
  ASSERT_TRUE(pending_requests_drop_to_zero());
  gate_->hold_next_commit_of("held");
  std::vector<std::future<Status>> admitted;
  admitted.push_back(send_signal("held", 0));
  gate_->wait_until_held();
  for (int i = 1; i < 5; ++i) admitted.push_back(send_signal("held", i));
  ASSERT_EQ(engine_->pending_requests(), 5u);
  auto refused = send_signal("idle", 0);
  ASSERT_TRUE(answered_within(refused, 5s));
  const Status s = refused.get();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
  EXPECT_TRUE(s.retryable());
  EXPECT_NE(s.message().find("--max-pending-requests"), std::string::npos) << s.message();
  auto start_refused = start("new");
  EXPECT_EQ(start_refused.status().code(), StatusCode::kResourceExhausted) << "starts are requests too";
  gate_->release();
  for (auto& f : admitted) EXPECT_TRUE(f.get().is_ok());
  EXPECT_EQ(signals_in_history("held"), 5);
  EXPECT_EQ(signals_in_history("idle"), 0) << "the refused signal was not recorded";
  EXPECT_TRUE(send_signal("idle", 1).get().is_ok()) << "slots come back when requests answer";
}

TEST_F(BackPressure, ADueTimerFiresEvenWhileItsWorkflowsQueueIsFull) {
  restart([](EngineOptions& o) { o.max_waiting_per_execution = 2; });
  ASSERT_TRUE(start("timed").is_ok());
  auto task = poll_workflow();
  v1::Command timer;
  timer.set_command_type(v1::COMMAND_TYPE_START_TIMER);
  timer.mutable_start_timer()->set_timer_id("t");
  timer.mutable_start_timer()->mutable_start_to_fire_timeout()->set_seconds(5);
  ASSERT_TRUE(complete(task.task_token(), {timer}).is_ok());

  gate_->hold_next_commit_of("timed");
  std::vector<std::future<Status>> admitted;
  admitted.push_back(send_signal("timed", 0));
  gate_->wait_until_held();
  for (int i = 1; i <= 3; ++i) admitted.push_back(send_signal("timed", i));
  const std::vector<Status> refused = take_answered(admitted, 1, 5s);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].code(), StatusCode::kResourceExhausted) << "the queue is full";
  clock_.advance(6s);
  engine_->check_timers();  // its fire waits in the full queue: the engine's own work is not refused
  std::this_thread::sleep_for(200ms);
  gate_->release();
  for (auto& f : admitted) EXPECT_TRUE(f.get().is_ok());
  v1::GetHistoryRequest wait;
  wait.mutable_workflow_execution()->set_workflow_id("timed");
  bool fired = false;
  for (int i = 0; i < 100 && !fired; ++i) {
    auto h = call(&Engine::get_history, wait);
    ASSERT_TRUE(h.is_ok());
    for (const auto& e : h->history().events()) fired |= e.event_type() == v1::EVENT_TYPE_TIMER_FIRED;
    if (!fired) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(fired) << "the timer fired once the queue moved";
}

}  // namespace
}  // namespace reprise::engine
