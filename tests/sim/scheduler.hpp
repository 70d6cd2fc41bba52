// The simulator's one scheduler: every job of the engine, the network and
// the simulated clients and workers runs here, on one OS thread, in an order
// drawn from the seed, on a virtual clock. The same seed gives the same run,
// event for event; trace_hash() fingerprints it.
//
// Runnable jobs are picked at random (where real threads could run them in
// any order); when none is runnable, the clock jumps to the earliest timed
// job. Thread safety: none; the simulator's thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace reprise::sim {

using Duration = std::chrono::nanoseconds;

class Scheduler {
 public:
  using Job = std::function<void()>;
  explicit Scheduler(uint64_t seed) : rng_(seed) {}

  // Runnable now.
  void post(std::string label, Job job);
  // Runnable once the virtual clock reaches now() + delay.
  void after(Duration delay, std::string label, Job job);
  // Runs one job; false when nothing is runnable or timed.
  bool step();
  // Called with the new virtual time whenever the clock moves, before the
  // jobs due then run (the engine's Clock follows it).
  void on_advance(std::function<void(Duration)> hook) { on_advance_ = std::move(hook); }

  Duration now() const { return now_; }
  uint64_t random(uint64_t bound) { return bound == 0 ? 0 : rng_() % bound; }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  Duration random_duration(Duration low, Duration high) {
    return low + Duration(static_cast<int64_t>(random(static_cast<uint64_t>((high - low).count()) + 1)));
  }

  // A fingerprint of every job run (label and time) so far.
  uint64_t trace_hash() const { return hash_; }
  uint64_t steps() const { return steps_; }
  // The last jobs run, oldest first: the short trace a failure prints.
  const std::deque<std::string>& recent() const { return recent_; }
  // Records a line in the trace (and the hash) that is not a job.
  void note(const std::string& line);
  // Every line of the trace also goes to stderr (reprise-sim --trace).
  void print_trace(bool on) { print_trace_ = on; }

 private:
  struct Entry {
    std::string label;
    Job job;
  };
  std::mt19937_64 rng_;
  Duration now_{0};
  uint64_t seq_ = 0;
  std::vector<Entry> runnable_;
  std::map<std::pair<Duration, uint64_t>, Entry> timed_;
  uint64_t hash_ = 1469598103934665603ull;
  uint64_t steps_ = 0;
  std::deque<std::string> recent_;
  std::function<void(Duration)> on_advance_;
  bool print_trace_ = false;
};

}  // namespace reprise::sim
