#include "scheduler.hpp"

#include <cstdio>

namespace reprise::sim {

namespace {

constexpr size_t kRecentLines = 40;

uint64_t fnv1a(uint64_t h, const std::string& s) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

void Scheduler::post(std::string label, Job job) { runnable_.push_back({std::move(label), std::move(job)}); }

void Scheduler::after(Duration delay, std::string label, Job job) {
  if (delay <= Duration(0)) return post(std::move(label), std::move(job));
  timed_.emplace(std::make_pair(now_ + delay, seq_++), Entry{std::move(label), std::move(job)});
}

void Scheduler::note(const std::string& line) {
  const std::string stamped = std::to_string(now_.count() / 1000000) + "ms " + line;
  hash_ = fnv1a(hash_, stamped);
  if (print_trace_) std::fprintf(stderr, "%s\n", stamped.c_str());
  recent_.push_back(stamped);
  if (recent_.size() > kRecentLines) recent_.pop_front();
}

bool Scheduler::step() {
  if (runnable_.empty()) {
    if (timed_.empty()) return false;
    // Everything due at the earliest time becomes runnable together, so the
    // seed orders jobs that real threads would race.
    now_ = timed_.begin()->first.first;
    if (on_advance_) on_advance_(now_);
    while (!timed_.empty() && timed_.begin()->first.first == now_) {
      runnable_.push_back(std::move(timed_.begin()->second));
      timed_.erase(timed_.begin());
    }
  }
  const size_t pick = random(runnable_.size());
  Entry entry = std::move(runnable_[pick]);
  runnable_[pick] = std::move(runnable_.back());
  runnable_.pop_back();
  ++steps_;
  note(entry.label);
  entry.job();
  return true;
}

}  // namespace reprise::sim
