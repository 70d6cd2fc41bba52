#include "engine/store/write_stall.hpp"

#include <algorithm>

namespace reprise::engine {

std::chrono::milliseconds WriteStallTracker::failed(const Status& error) {
  const auto now = std::chrono::steady_clock::now();
  if (!stall_.stalled) {
    // Attempts of short stalls that were not reported are counted into the
    // next report.
    stall_ = WriteStall{true, "", 0, stall_.unreported, std::chrono::seconds(0)};
    began_ = now;
    reported_ = false;
  }
  ++stall_.attempts;
  ++stall_.unreported;
  stall_.error = error.to_string();
  stall_.duration = std::chrono::duration_cast<std::chrono::seconds>(now - began_);
  {
    std::lock_guard lock(mu_);
    problem_ = "the store cannot write (" + stall_.error + ") for " + std::to_string(stall_.duration.count()) +
               " s; every write waits and is tried again (" + std::to_string(stall_.attempts) + " attempts so far)";
  }
  // A report at a stall's first failure, then one every 10 s, counting from
  // the last report of any stall: near a full disk, short stalls in a row
  // (a commit fails, room is freed, the retry goes through) make one line
  // per 10 s, not two per stall.
  if (last_report_ == std::chrono::steady_clock::time_point{} || now - last_report_ >= std::chrono::seconds(10)) {
    if (report_) report_(stall_);
    stall_.unreported = 0;
    last_report_ = now;
    reported_ = true;
  }
  return std::min<std::chrono::milliseconds>(
      std::chrono::milliseconds(int64_t{100} << std::min<int64_t>(stall_.attempts - 1, 7)), std::chrono::seconds(10));
}

void WriteStallTracker::ended() {
  if (!stall_.stalled) return;
  const auto now = std::chrono::steady_clock::now();
  stall_.stalled = false;
  stall_.duration = std::chrono::duration_cast<std::chrono::seconds>(now - began_);
  {
    std::lock_guard lock(mu_);
    problem_.clear();
  }
  if (!reported_) return;  // nobody heard of it: no news that it ended
  if (report_) report_(stall_);
  stall_.unreported = 0;
  last_report_ = now;
}

std::string WriteStallTracker::problem() const {
  std::lock_guard lock(mu_);
  return problem_;
}

}  // namespace reprise::engine
