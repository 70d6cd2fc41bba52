// Helpers shared by the store tests: a temporary directory and transitions
// that build a plausible execution step by step.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "engine/store/records.hpp"
#include "history/batch_codec.hpp"
#include "history/event_builder.hpp"

namespace reprise::engine::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "reprise-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline ExecutionKey key(const std::string& workflow_id, const std::string& run_id = "run-1") {
  return {"default", workflow_id, run_id};
}

// `count` consecutive events starting at `first`, encoded as a stored batch.
inline HistoryBatch events(int64_t first, int count) {
  history::HistoryBuilder b(first, from_unix_nanos(1'700'000'000'000'000'000));
  for (int i = 0; i < count; ++i) {
    b.add(&v1::HistoryEvent::mutable_timer_started)->set_timer_id("t" + std::to_string(first + i));
  }
  history::EventBatchCodec codec;
  return {first, first + count - 1, *codec.encode(b.events())};
}

// The n-th step (1-based) of an execution: version n, events 3n-2..3n.
inline ExecutionWrite step(const ExecutionKey& k, int64_t n) {
  ExecutionWrite w;
  w.key = k;
  w.expected_version = n - 1;
  w.state = "v=" + std::to_string(n);
  w.events = events(3 * n - 2, 3);
  return w;
}

// The n-th step of an execution as the crash tests commit it: its history and
// state (padded with `state_padding` dots), the swap of its single pending
// task, one more timer and its visibility row, all in one transition.
// crash_invariants.hpp checks that each is there whole or not at all.
inline Transition whole_step(const ExecutionKey& k, int64_t n, int64_t previous_task, size_t state_padding = 0) {
  Transition t;
  ExecutionWrite w = step(k, n);
  w.state += std::string(state_padding, '.');
  t.executions.push_back(std::move(w));
  if (previous_task != 0) t.remove_tasks.push_back(previous_task);
  t.add_tasks.push_back({0, TaskKind::kWorkflowTask, "q", k, k.workflow_id + ":" + std::to_string(n)});
  t.add_timers.push_back({0, from_unix_nanos(n), k, std::to_string(n)});
  t.visibility.push_back({k, "crash", "q", v1::WORKFLOW_EXECUTION_STATUS_RUNNING, from_unix_nanos(n), {}});
  return t;
}

// The child process binary built beside the tests.
inline std::string store_child_path() {
  const char* p = std::getenv("REPRISE_STORE_CHILD");
  return p == nullptr ? std::string() : std::string(p);
}

}  // namespace reprise::engine::testing
