// Heartbeats are throttled as Temporal's SDKs throttle them (issue 14,
// defect 6): a tight loop of heartbeats costs a handful of RPCs and durable
// writes, the latest details win, details still unsent when an attempt fails
// go with the failure, and heartbeat() never waits for the server while a
// cancellation still reaches the activity. Against a real reprise-server.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "../server/server_harness.hpp"
#include "forwarding_connection.hpp"
#include "reprise/client.hpp"
#include "reprise/worker.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

// Forwards every call; counts the HeartbeatActivity RPCs (each one is a
// durable write on the server), keeps the last FailActivity request, and can
// hold heartbeat RPCs at a gate, as a server that does not answer would.
class Observed : public ForwardingConnection {
 public:
  explicit Observed(std::shared_ptr<Connection> inner) : ForwardingConnection(std::move(inner)) {}

  int heartbeats() const { return heartbeats_.load(); }
  int heartbeats_answered() const { return answered_.load(); }
  v1::FailActivityRequest last_failure() {
    std::lock_guard lock(mu_);
    return last_failure_;
  }
  void close_gate() {
    std::lock_guard lock(mu_);
    gate_open_ = false;
  }
  void open_gate() {
    {
      std::lock_guard lock(mu_);
      gate_open_ = true;
    }
    cv_.notify_all();
  }

  bool heartbeat_activity(const v1::HeartbeatActivityRequest& r) override {
    ++heartbeats_;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return gate_open_; });
    }
    bool canceled = inner_->heartbeat_activity(r);
    ++answered_;
    return canceled;
  }
  void fail_activity(const v1::FailActivityRequest& r) override {
    {
      std::lock_guard lock(mu_);
      last_failure_ = r;
    }
    inner_->fail_activity(r);
  }

 private:
  std::atomic<int> heartbeats_{0};
  std::atomic<int> answered_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool gate_open_ = true;
  v1::FailActivityRequest last_failure_;
};

// Waits up to `limit` for `done`.
template <typename F>
bool eventually(F done, std::chrono::milliseconds limit = 15s) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

std::optional<int64_t> heartbeat_of(const v1::DescribeWorkflowResponse& d) {
  if (d.pending_activities_size() != 1 || d.pending_activities(0).heartbeat_details().payloads_size() == 0) {
    return std::nullopt;
  }
  return from_payload<int64_t>(d.pending_activities(0).heartbeat_details().payloads(0), "heartbeat details");
}

// --- 1,000 heartbeats in a tight loop ---

std::atomic<bool> burst_may_finish{false};
int64_t burst(ActivityContext& ctx, int64_t n) {
  ctx.heartbeat(int64_t{0});
  std::this_thread::sleep_for(100ms);  // the first heartbeat is sent at once
  for (int64_t i = 1; i <= n; ++i) ctx.heartbeat(i);
  eventually([] { return burst_may_finish.load(); }, 30s);
  return n;
}
inline constexpr Activity<&burst> burst_act{"burst"};
Workflow<int64_t> bursts(WorkflowContext& ctx, int64_t n) {
  co_return co_await ctx.execute(burst_act, ActivityOptions::start_to_close(1min).heartbeat(2s), n);
}
inline constexpr WorkflowDef<&bursts> bursts_wf{"bursts"};

TEST(Heartbeats, AThousandInATightLoopCostTwoRpcsAndTheServerKeepsTheLast) {
  burst_may_finish = false;
  TempDir dir;
  Server server(dir.file("burst.db"));
  auto connection = std::make_shared<Observed>(Connection::remote(server.address()));
  Worker worker(connection, {.task_queue = "hb"});
  worker.register_workflow(bursts_wf);
  worker.register_activity(burst_act);
  worker.start();
  Client client(connection);
  auto run = client.start(bursts_wf, {.id = "burst", .task_queue = "hb"}, int64_t{1000});
  // The first heartbeat goes at once; the 1,000 after it, within the 1.6 s
  // throttle interval (0.8 × 2 s), only replace each other, and the last is
  // sent when the interval ends.
  EXPECT_TRUE(eventually([&] { return heartbeat_of(run.describe()) == 0; })) << "the first heartbeat is sent at once";
  EXPECT_TRUE(eventually([&] { return heartbeat_of(run.describe()) == 1000; }))
      << "the server has the latest details once the interval is over";
  std::this_thread::sleep_for(200ms);  // nothing more is sent: nothing is pending
  EXPECT_EQ(connection->heartbeats(), 2) << "HeartbeatActivity RPCs (each a durable write) for 1,001 heartbeats";
  burst_may_finish = true;
  EXPECT_EQ(run.result(30s), 1000);
  worker.stop();
}

// --- the latest details reach the next attempt after a heartbeat timeout ---

std::atomic<bool> stalled_retry_done{false};
int64_t stalls(ActivityContext& ctx) {
  if (ctx.info().attempt > 1) {
    stalled_retry_done = true;
    return ctx.last_heartbeat<int64_t>().value_or(-1);
  }
  for (int64_t i = 1; i <= 500; ++i) ctx.heartbeat(i);
  // Hangs, as a worker that crashed or stalled: the server times the
  // attempt out by its heartbeat timeout and retries it.
  eventually([] { return stalled_retry_done.load(); }, 30s);
  throw CanceledError("the attempt is over");
}
inline constexpr Activity<&stalls> stalls_act{"stalls"};
Workflow<int64_t> stalling(WorkflowContext& ctx) {
  co_return co_await ctx.execute(stalls_act,
                                 ActivityOptions::start_to_close(1min).heartbeat(1s).retry_initial_interval(50ms));
}
inline constexpr WorkflowDef<&stalling> stalling_wf{"stalling"};

TEST(Heartbeats, TheNextAttemptAfterAHeartbeatTimeoutStartsFromTheLatestDetails) {
  stalled_retry_done = false;
  TempDir dir;
  Server server(dir.file("stall.db"));
  auto connection = std::make_shared<Observed>(Connection::remote(server.address()));
  Worker worker(connection, {.task_queue = "hb", .shutdown_grace = 100ms});
  worker.register_workflow(stalling_wf);
  worker.register_activity(stalls_act);
  worker.start();
  Client client(connection);
  EXPECT_EQ(client.execute(stalling_wf, {.id = "stall", .task_queue = "hb"}), 500);
  EXPECT_LE(connection->heartbeats(), 2) << "HeartbeatActivity RPCs for 500 heartbeats";
  worker.stop();
}

// --- details unsent when an attempt fails go with the failure ---

int64_t flaky(ActivityContext& ctx) {
  if (ctx.info().attempt > 1) return ctx.last_heartbeat<int64_t>().value_or(-1);
  for (int64_t i = 1; i <= 100; ++i) ctx.heartbeat(i);
  throw std::runtime_error("lost the connection to the card network");
}
inline constexpr Activity<&flaky> flaky_act{"flaky"};
Workflow<int64_t> retrying(WorkflowContext& ctx) {
  co_return co_await ctx.execute(flaky_act,
                                 ActivityOptions::start_to_close(1min).heartbeat(10s).retry_initial_interval(50ms));
}
inline constexpr WorkflowDef<&retrying> retrying_wf{"retrying"};

TEST(Heartbeats, DetailsNotYetSentWhenAnAttemptFailsGoWithTheFailure) {
  TempDir dir;
  Server server(dir.file("flaky.db"));
  auto connection = std::make_shared<Observed>(Connection::remote(server.address()));
  Worker worker(connection, {.task_queue = "hb"});
  worker.register_workflow(retrying_wf);
  worker.register_activity(flaky_act);
  worker.start();
  Client client(connection);
  EXPECT_EQ(client.execute(retrying_wf, {.id = "flaky", .task_queue = "hb"}), 100)
      << "the retry starts from the last heartbeat";
  const v1::FailActivityRequest failed = connection->last_failure();
  ASSERT_EQ(failed.last_heartbeat_details().payloads_size(), 1) << "FailActivity carries the unsent details";
  EXPECT_EQ(from_payload<int64_t>(failed.last_heartbeat_details().payloads(0), "details"), 100);
  EXPECT_LE(connection->heartbeats(), 1) << "within one 8 s interval only the first heartbeat is sent";
  worker.stop();
}

// --- cancellation reaches an activity whose heartbeats never wait ---

std::atomic<int64_t> spins{0};
std::atomic<bool> spin_saw_cancel{false};
int64_t spin(ActivityContext& ctx) {
  for (int64_t i = 0; i < 60'000; ++i) {
    ctx.heartbeat(i);
    ++spins;
    if (ctx.cancel_requested()) {
      spin_saw_cancel = true;
      throw CanceledError("spin canceled");
    }
    std::this_thread::sleep_for(1ms);
  }
  return spins.load();
}
inline constexpr Activity<&spin> spin_act{"spin"};
Workflow<int64_t> spinning(WorkflowContext& ctx) {
  co_return co_await ctx.execute(spin_act, ActivityOptions::start_to_close(2min).heartbeat(2s));
}
inline constexpr WorkflowDef<&spinning> spinning_wf{"spinning"};

TEST(Heartbeats, HeartbeatNeverWaitsForTheServerAndACancellationStillArrives) {
  spins = 0;
  spin_saw_cancel = false;
  TempDir dir;
  Server server(dir.file("spin.db"));
  auto connection = std::make_shared<Observed>(Connection::remote(server.address()));
  Worker worker(connection, {.task_queue = "hb"});
  worker.register_workflow(spinning_wf);
  worker.register_activity(spin_act);
  worker.start();
  Client client(connection);

  // A server that does not answer heartbeats: the activity goes on.
  const auto began = std::chrono::steady_clock::now();
  connection->close_gate();
  auto run = client.start(spinning_wf, {.id = "spin", .task_queue = "hb"});
  EXPECT_TRUE(eventually([] { return spins.load() >= 50; }, 10s))
      << "heartbeat() waited for an RPC the server did not answer; the activity made " << spins.load() << " heartbeats";
  EXPECT_EQ(connection->heartbeats_answered(), 0);
  connection->open_gate();
  ASSERT_TRUE(eventually([&] { return connection->heartbeats_answered() >= 1; }));

  // A cancellation is seen within about one throttle interval (1.6 s).
  const auto canceled_at = std::chrono::steady_clock::now();
  run.cancel("no longer needed");
  EXPECT_TRUE(eventually([] { return spin_saw_cancel.load(); }, 15s));
  const auto took = std::chrono::steady_clock::now() - canceled_at;
  EXPECT_LT(took, 6s) << "the cancellation took " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                      << " ms";
  EXPECT_THROW(run.result(30s), WorkflowFailedError);
  const auto ran = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began);
  EXPECT_LE(connection->heartbeats(), 2 + ran / 1600ms) << spins.load() << " heartbeats in " << ran.count() << " ms";
  worker.stop();
}

}  // namespace
}  // namespace reprise
