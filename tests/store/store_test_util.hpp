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

// The child process binary built beside the tests.
inline std::string store_child_path() {
  const char* p = std::getenv("REPRISE_STORE_CHILD");
  return p == nullptr ? std::string() : std::string(p);
}

}  // namespace reprise::engine::testing
