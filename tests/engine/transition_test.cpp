// Engine::transition as docs/engine.md ("One operation, one transition")
// describes it: operations on one execution are serialized however many
// arrive at once, and the caller is answered only once the change is
// committed, with the commit's failure if it failed.
#include <atomic>
#include <set>

#include "../captured_stderr.hpp"
#include "gated_store.hpp"

namespace reprise::engine {
namespace {

Result<v1::SignalWorkflowResponse> signal(Engine& engine, const std::string& workflow_id, const std::string& value) {
  v1::SignalWorkflowRequest r;
  r.mutable_workflow_execution()->set_workflow_id(workflow_id);
  r.set_signal_name("add");
  r.mutable_input()->add_payloads()->set_data(value);
  r.set_request_id("signal-" + value);
  std::promise<Result<v1::SignalWorkflowResponse>> done;
  engine.signal_workflow(r, [&done](Result<v1::SignalWorkflowResponse> out) { done.set_value(std::move(out)); });
  return done.get_future().get();
}

v1::History full_history(EngineTest& test, const std::string& workflow_id) {
  v1::GetHistoryRequest r;
  r.mutable_workflow_execution()->set_workflow_id(workflow_id);
  auto out = test.call(&Engine::get_history, r);
  EXPECT_TRUE(out.is_ok()) << out.status().to_string();
  return out.is_ok() ? out->history() : v1::History();
}

using TransitionTest = GatedEngineTest;

// Without the serializer two of these load the same version of the
// execution and one commit loses the race (ABORTED): every call must
// succeed and every signal be recorded once.
TEST_F(TransitionTest, ConcurrentOperationsOnOneExecutionAreSerializedAndAllCommit) {
  ASSERT_TRUE(start("crowded").is_ok());
  constexpr int kThreads = 4;
  constexpr int kEach = 40;
  std::atomic<int> failed{0};
  std::vector<std::thread> senders;
  for (int t = 0; t < kThreads; ++t) {
    senders.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        auto r = signal(*engine_, "crowded", std::to_string(t) + "-" + std::to_string(i));
        if (!r.is_ok()) {
          ADD_FAILURE() << "signal " << t << "-" << i << ": " << r.status().to_string();
          ++failed;
        }
      }
    });
  }
  for (auto& s : senders) s.join();
  EXPECT_EQ(failed.load(), 0);

  const v1::History h = full_history(*this, "crowded");
  std::multiset<std::string> recorded;
  for (int i = 0; i < h.events_size(); ++i) {
    EXPECT_EQ(h.events(i).event_id(), i + 1) << "event ids are gap-free";
    if (h.events(i).has_workflow_execution_signaled()) {
      recorded.insert(h.events(i).workflow_execution_signaled().input().payloads(0).data());
    }
  }
  EXPECT_EQ(recorded.size(), static_cast<size_t>(kThreads * kEach));
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kEach; ++i) {
      EXPECT_EQ(recorded.count(std::to_string(t) + "-" + std::to_string(i)), 1u) << t << "-" << i;
    }
  }
}

// The answer waits for the commit, and a commit that fails reaches the
// caller as that failure, with nothing recorded; the execution's next
// operation goes through.
TEST_F(TransitionTest, TheCallerIsAnsweredAfterTheCommitAndAFailedCommitReachesIt) {
  ASSERT_TRUE(start("lossy").is_ok());
  gate_->hold_next_commit_of("lossy");
  auto lost = std::async(std::launch::async, [&] { return signal(*engine_, "lossy", "lost"); });
  gate_->wait_until_held();
  EXPECT_EQ(lost.wait_for(300ms), std::future_status::timeout) << "answered before its commit";
  gate_->lose_held_commit();
  const auto r = lost.get();
  ASSERT_FALSE(r.is_ok()) << "a signal whose commit failed was answered OK";
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().to_string();
  EXPECT_EQ(r.status().message(), "the test lost this commit");

  ASSERT_TRUE(signal(*engine_, "lossy", "kept").is_ok());
  const v1::History h = full_history(*this, "lossy");
  std::vector<std::string> recorded;
  for (const auto& e : h.events()) {
    if (e.has_workflow_execution_signaled())
      recorded.push_back(e.workflow_execution_signaled().input().payloads(0).data());
  }
  EXPECT_EQ(recorded, std::vector<std::string>{"kept"});
}

// A commit the store fails is an error of the store, not of the caller's
// request: it is logged with the store's reason (docs/engine.md, Logs).
TEST_F(TransitionTest, AFailedCommitIsLoggedWithTheStoresReason) {
  ASSERT_TRUE(start("lossy").is_ok());
  log::set_format(log::Format::kLogfmt);
  const std::string logged = ::reprise::testing::captured_stderr_of([&] {
    gate_->hold_next_commit_of("lossy");
    auto lost = std::async(std::launch::async, [&] { return signal(*engine_, "lossy", "lost"); });
    gate_->wait_until_held();
    gate_->lose_held_commit();
    EXPECT_FALSE(lost.get().is_ok());
  });
  EXPECT_NE(logged.find("level=error msg=\"commit failed\" error=\"UNAVAILABLE: the test lost this commit\""),
            std::string::npos)
      << logged;
}

}  // namespace
}  // namespace reprise::engine
