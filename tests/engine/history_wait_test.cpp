// History long-polls hold nothing once answered, and wait no longer than the
// engine allows whatever the client asks.
#include "engine_fixture.hpp"

namespace reprise::engine {
namespace {

v1::GetHistoryRequest wait_after(const std::string& workflow_id, int64_t first_event_id, int64_t wait_seconds) {
  v1::GetHistoryRequest r;
  r.mutable_workflow_execution()->set_workflow_id(workflow_id);
  r.set_first_event_id(first_event_id);
  r.set_wait_new_event(true);
  r.mutable_wait_timeout()->set_seconds(wait_seconds);
  return r;
}

TEST_F(EngineTest, AnsweredHistoryWaitsLetGoOfTheirDeadlines) {
  ASSERT_TRUE(start("watched").is_ok());
  const int64_t next = *describe_length("watched") + 1;
  constexpr int kWaits = 50;
  std::vector<std::promise<Result<v1::GetHistoryResponse>>> answers(kWaits);
  for (auto& answer : answers) {
    engine_->get_history(wait_after("watched", next, 3600),
                         [&answer](Result<v1::GetHistoryResponse> r) { answer.set_value(std::move(r)); });
  }
  // The waits park on the read pool, after get_history returned.
  for (int i = 0; i < 500 && engine_->pending_deadlines() < static_cast<size_t>(kWaits); ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(engine_->pending_deadlines(), static_cast<size_t>(kWaits));
  v1::SignalWorkflowRequest signal;
  signal.mutable_workflow_execution()->set_workflow_id("watched");
  signal.set_signal_name("wake");
  ASSERT_TRUE(call(&Engine::signal_workflow, signal).is_ok());
  for (auto& answer : answers) {
    auto r = answer.get_future().get();
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_GT(r->history().events_size(), 0);
  }
  EXPECT_EQ(engine_->pending_deadlines(), 0u) << "an hour-long deadline outlived each answered wait";
}

TEST_F(EngineTest, AHistoryWaitIsClampedToTheEnginesLimit) {
  restart([](EngineOptions& o) { o.max_history_wait = 200ms; });
  ASSERT_TRUE(start("quiet").is_ok());
  const int64_t next = *describe_length("quiet") + 1;
  std::promise<Result<v1::GetHistoryResponse>> answer;
  auto answered = answer.get_future();
  engine_->get_history(wait_after("quiet", next, 3600),
                       [&answer](Result<v1::GetHistoryResponse> r) { answer.set_value(std::move(r)); });
  EXPECT_EQ(answered.wait_for(5s), std::future_status::ready) << "an hour-long wait was not clamped";
  engine_->shutdown();  // ends the wait if it was not
  auto r = answered.get();
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->history().events_size(), 0);
}

}  // namespace
}  // namespace reprise::engine
