// HeartbeatSender on its own, with a scripted RPC: the throttle interval,
// the first heartbeat sent at once and the latest at the end of the interval,
// NOT_FOUND as cancellation, and stop() sending nothing more.
#include "worker/heartbeat_sender.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "history/status.hpp"
#include "reprise/client.hpp"

namespace reprise::worker {
namespace {

using namespace std::chrono_literals;

v1::Payloads details(int n) {
  v1::Payloads p;
  p.add_payloads()->set_data(std::to_string(n));
  return p;
}

// The RPC: records what it was sent; a closed gate holds the call.
struct ScriptedRpc {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> sent;
  bool gate_open = true;
  bool answer_cancel = false;
  bool not_found = false;

  HeartbeatSender::Send send() {
    return [this](const v1::Payloads& p) {
      std::unique_lock lock(mu);
      sent.push_back(p.payloads(0).data());
      cv.notify_all();
      cv.wait(lock, [this] { return gate_open; });
      if (not_found) throw RpcError(static_cast<int>(StatusCode::kNotFound), "the attempt is over");
      return answer_cancel;
    };
  }
  bool wait_for_sends(size_t n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, 10s, [&] { return sent.size() >= n; });
  }
  std::vector<std::string> sends() {
    std::lock_guard lock(mu);
    return sent;
  }
  void open() {
    std::lock_guard lock(mu);
    gate_open = true;
    cv.notify_all();
  }
};

TEST(HeartbeatSender, TheIntervalIsFourFifthsOfTheTimeoutCappedOrTheDefaultWithoutOne) {
  EXPECT_EQ(HeartbeatSender::interval_for(2s, 30s, 60s), 1600ms);
  EXPECT_EQ(HeartbeatSender::interval_for(5min, 30s, 60s), 60s);
  EXPECT_EQ(HeartbeatSender::interval_for(0s, 30s, 60s), 30s);
}

TEST(HeartbeatSender, TheFirstGoesAtOnceAndTheLatestAtTheEndOfTheInterval) {
  ScriptedRpc rpc;
  rpc.gate_open = false;
  HeartbeatSender sender(rpc.send(), 200ms, nullptr, "test");
  EXPECT_FALSE(sender.record(details(1)));
  ASSERT_TRUE(rpc.wait_for_sends(1));
  // The call is held: recording does not wait for it.
  for (int i = 2; i <= 1000; ++i) sender.record(details(i));
  rpc.open();
  ASSERT_TRUE(rpc.wait_for_sends(2));
  std::this_thread::sleep_for(400ms);  // two more intervals: nothing is pending
  EXPECT_EQ(rpc.sends(), (std::vector<std::string>{"1", "1000"}));
  EXPECT_EQ(sender.latest()->payloads(0).data(), "1000");
}

TEST(HeartbeatSender, AnAnswerThatSaysCancelIsHeardWithoutAnotherCall) {
  ScriptedRpc rpc;
  rpc.answer_cancel = true;
  std::atomic<int> told{0};
  HeartbeatSender sender(
      rpc.send(), 10s, [&] { ++told; }, "test");
  sender.record(details(1));
  for (int i = 0; i < 1000 && told == 0; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(told.load(), 1);
  EXPECT_TRUE(sender.cancel_requested());
  EXPECT_TRUE(sender.record(details(2)));
  sender.stop();
  EXPECT_EQ(rpc.sends().size(), 1u) << "details recorded within the interval are not sent after stop()";
}

TEST(HeartbeatSender, NotFoundMeansTheAttemptIsOverAndNothingMoreIsSent) {
  ScriptedRpc rpc;
  rpc.not_found = true;
  std::atomic<int> told{0};
  HeartbeatSender sender(
      rpc.send(), 1ms, [&] { ++told; }, "test");
  sender.record(details(1));
  for (int i = 0; i < 1000 && told == 0; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(sender.record(details(2)));
  std::this_thread::sleep_for(50ms);
  sender.stop();
  EXPECT_EQ(told.load(), 1);
  EXPECT_EQ(rpc.sends().size(), 1u);
}

}  // namespace
}  // namespace reprise::worker
