// Testing workflows: an in-process engine whose clock skips ahead, and the
// replay check to run in CI after changing workflow code.
//
//   reprise::testing::TestEnvironment env;          // embedded engine, temp database
//   reprise::Worker worker(env.connection(), {.task_queue = "t"});
//   ...
//   client.execute(monthly_invoice_wf, ...);        // sleeps 30 days in milliseconds
//   env.sleep(24h);                                 // a day passes while the test waits
//
//   reprise::testing::replay("histories/order-7.json", checkout_wf);  // throws NonDeterminismError
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "reprise/client.hpp"
#include "reprise/clock.hpp"
#include "reprise/detail/replay.hpp"
#include "reprise/detail/workflow_starter.hpp"
#include "reprise/export.hpp"
#include "reprise/history_file.hpp"

namespace reprise {
class EmbeddedConnection;
}

namespace reprise::testing {

struct TestEnvironmentOptions {
  // While the test waits — blocked in a workflow's result() through
  // env.connection(), or in env.sleep() — and nothing else can happen (no
  // task queued or running), moves the clock to the next timer: a workflow
  // sleeping 30 days finishes at once. While the test does anything else
  // (sleeps on its own, sends signals, polls queries), time stands still.
  bool time_skipping = true;
};

// The engine in this process on a temporary database (deleted afterwards),
// with a clock of its own that starts at the real time.
class REPRISE_EXPORT TestEnvironment {
 public:
  explicit TestEnvironment(TestEnvironmentOptions options = {});
  ~TestEnvironment();
  TestEnvironment(const TestEnvironment&) = delete;

  // For Workers and Clients. Tasks handed out through it hold time still
  // until they are answered.
  std::shared_ptr<Connection> connection() const { return connection_; }
  // The environment's time, as workflows see it.
  TimePoint now() const { return clock_.now(); }
  // Moves time forward by hand (with or without skipping).
  void advance(std::chrono::nanoseconds by);
  // Lets `d` of the environment's time pass while the test waits: timers
  // due within it fire one at a time, each once the workflows are idle;
  // returns at `d` later, once they are idle again. Without time skipping,
  // advance(d).
  void sleep(std::chrono::nanoseconds d);

 private:
  class TrackingConnection;
  bool idle();
  void skip_time();

  std::string directory_;
  ManualClock clock_;
  std::shared_ptr<EmbeddedConnection> embedded_;
  std::shared_ptr<TrackingConnection> tracking_;
  std::shared_ptr<Connection> connection_;
  std::atomic<bool> stopping_{false};
  // The end of the env.sleep() in progress, if one is.
  std::mutex sleep_mu_;
  std::condition_variable sleep_over_;
  std::optional<TimePoint> sleep_until_;
  std::thread skipper_;
};

// Replays an exported history (JSON or binary) against the current code of
// `workflow`. Throws NonDeterminismError naming the event where the code
// now does something else, reprise::Error when the file cannot be used.
template <auto Fn>
void replay(const std::string& history_file, const WorkflowDef<Fn>& workflow) {
  detail::replay_history(read_history_file(history_file), workflow.name, worker::make_starter<Fn>(workflow.name));
}
template <auto Fn>
void replay(const v1::History& history, const WorkflowDef<Fn>& workflow) {
  detail::replay_history(history, workflow.name, worker::make_starter<Fn>(workflow.name));
}

}  // namespace reprise::testing
