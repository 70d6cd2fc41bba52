// WriteStallTracker: what a store's writer knows while its writes wait for
// room on a full disk, shared by both stores' writers (SQLite's
// TransitionWriter, PostgreSQL's PgTransitionWriter) so that a stall reads,
// logs and backs off the same on either.
//
// A writer that meets a full disk calls failed() for each attempt and waits
// the delay it returns (100 ms, doubling to 10 s), then ended() once a write
// goes through. The tracker keeps the text problem() gives describe and the
// health check, and calls the StallReport at a stall's first failure, every
// 10 s while it lasts, and when it ends; never twice within 10 s, across
// stalls too (near a full disk a stall can begin and end several times a
// second): a stall that begins within 10 s of the last report is counted
// into the next report's `unreported`, and its end, if it was never
// reported, is not.
//
// give_back_half() is the other half of waiting: a batch that failed for
// want of room keeps its first half and puts the rest back at the front of
// the queue, so room for a few writes lets a few through.
//
// Thread safety: failed() and ended() on the writer thread only; problem()
// from any thread. The report runs on the writer thread and must not block.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

#include "history/status.hpp"

namespace reprise::engine {

struct WriteStall {
  bool stalled = false;              // false: writes went through again
  std::string error;                 // the last failure
  int64_t attempts = 0;              // failed attempts since the stall began
  int64_t unreported = 0;            // of which since the previous report
  std::chrono::seconds duration{0};  // since the stall began
};
// Hears of writes waiting for room (see above).
using StallReport = std::function<void(const WriteStall&)>;

class WriteStallTracker {
 public:
  explicit WriteStallTracker(StallReport report) : report_(std::move(report)) {}

  // A write failed for want of room: the stall begins or goes on. Returns
  // how long to wait before trying again.
  std::chrono::milliseconds failed(const Status& error);
  // A write went through: the stall, if any, is over.
  void ended();
  bool stalled() const { return stall_.stalled; }
  // "" while writes go through; otherwise why they wait, and since when.
  std::string problem() const;

 private:
  StallReport report_;
  WriteStall stall_;
  std::chrono::steady_clock::time_point began_, last_report_;
  bool reported_ = false;  // the stall in progress has had a report
  mutable std::mutex mu_;
  std::string problem_;  // under mu_
};

// Keeps the first half of `batch` and puts the rest back at the front of
// `queue`, in order: it commits after the kept half and before anything
// queued later, so commits keep the order of submission. Returns the size
// kept. The caller holds whatever guards `queue`.
template <typename Pending>
size_t give_back_half(std::deque<Pending>& batch, std::deque<Pending>& queue) {
  const size_t keep = batch.size() / 2;
  while (batch.size() > keep) {
    queue.push_front(std::move(batch.back()));
    batch.pop_back();
  }
  return keep;
}

}  // namespace reprise::engine
