// Testing workflows: an in-process engine whose clock skips ahead, and the
// replay check to run in CI after changing workflow code.
//
//   reprise::testing::TestEnvironment env;          // embedded engine, temp database
//   reprise::Worker worker(env.connection(), {.task_queue = "t"});
//   ...
//   client.execute(monthly_invoice_wf, ...);        // sleeps 30 days in milliseconds
//
//   reprise::testing::replay("histories/order-7.json", checkout_wf);  // throws NonDeterminismError
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "history/clock.hpp"
#include "reprise/client.hpp"
#include "reprise/detail/workflow_starter.hpp"
#include "reprise/history_file.hpp"

namespace reprise {
class EmbeddedConnection;
}

namespace reprise::testing {

struct TestEnvironmentOptions {
  // Moves the clock to the next timer whenever nothing else can happen (no
  // task queued or running): a workflow sleeping 30 days finishes at once.
  bool time_skipping = true;
};

// The engine in this process on a temporary database (deleted afterwards),
// with a clock of its own that starts at the real time.
class TestEnvironment {
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
  std::thread skipper_;
};

namespace detail {
// Replays `history` through a fresh instance of the workflow `starter` runs.
void replay_history(const v1::History& history, const std::string& workflow_type, worker::WorkflowStarter starter);
}  // namespace detail

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
