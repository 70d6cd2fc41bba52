// HeartbeatSender: sends one activity attempt's heartbeats to the server,
// throttled as Temporal's SDKs do, so that a heartbeat costs the activity no
// RPC and the server no durable write per call.
//
//   - The first heartbeat is sent at once; the ones recorded within the
//     throttle interval after a send are only kept, the latest replacing the
//     one before, and the latest is sent when the interval ends. A heartbeat
//     recorded after a quiet interval is again sent at once.
//   - The interval (interval_for) is 0.8 × the activity's heartbeat timeout,
//     at most `max` (Temporal: 60 s); with no heartbeat timeout, `fallback`
//     (Temporal: 30 s). The server hears of a heartbeating activity at least
//     once per interval, well within its heartbeat timeout.
//   - record() never waits for the server: it answers with the cancellation
//     the latest answer carried (or that the attempt is over: NOT_FOUND), so
//     a cancellation reaches a heartbeating activity within about one interval.
//     `on_cancel` is called (on the sender thread) when an answer first says so.
//   - stop() ends it when the attempt ends: details not yet sent are not sent
//     (a completion or cancellation closes the activity; a failure carries
//     them in FailActivityRequest.last_heartbeat_details, from latest()).
//   - A failed RPC other than NOT_FOUND is logged (once per run of failures)
//     and the latest details are sent again at the end of the next interval.
//     After NOT_FOUND (the attempt is over) nothing more is sent.
//
// Thread rule: one sender thread per activity attempt, started by the first
// record() and joined by stop() (or the destructor); it is the only thread
// that calls `send` for the attempt, at most one call at a time, and it never
// holds the lock during the call. record() may be called from any thread
// (the activity's); stop() and latest() from the thread that runs the
// activity, after it has returned. stop() waits for a call in flight (bounded
// by the connection's RPC deadline), so no sender thread outlives its attempt
// and Worker::stop(), which joins the activity pool, leaves none behind.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "reprise/v1/common.pb.h"

namespace reprise::worker {

class HeartbeatSender {
 public:
  // The RPC: sends the details, answers whether cancellation was requested;
  // throws (RpcError, NOT_FOUND when the attempt is over) when it fails.
  using Send = std::function<bool(const v1::Payloads&)>;

  // `what` names the activity in log lines.
  HeartbeatSender(Send send, std::chrono::nanoseconds interval, std::function<void()> on_cancel, std::string what);
  ~HeartbeatSender();
  HeartbeatSender(const HeartbeatSender&) = delete;
  HeartbeatSender& operator=(const HeartbeatSender&) = delete;

  // The throttle interval for an activity with this heartbeat timeout (0: none).
  static std::chrono::nanoseconds interval_for(std::chrono::nanoseconds heartbeat_timeout,
                                               std::chrono::nanoseconds fallback, std::chrono::nanoseconds max);

  // Keeps `details` as the latest, to be sent now or at the end of the
  // interval. Never waits for an RPC. True once cancellation is known.
  bool record(v1::Payloads details);
  // Ends the sender thread (see above); idempotent.
  void stop();
  // The latest details recorded, sent or not; nullopt if none were.
  std::optional<v1::Payloads> latest() const;
  bool cancel_requested() const;

 private:
  using Clock = std::chrono::steady_clock;
  void run();
  void log_failure(const char* error) const;

  const Send send_;
  const std::chrono::nanoseconds interval_;
  const std::function<void()> on_cancel_;
  const std::string what_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<v1::Payloads> latest_;  // guarded by mu_
  bool unsent_ = false;                 // latest_ has not reached the server; guarded by mu_
  bool cancel_ = false;                 // guarded by mu_
  bool stopping_ = false;               // guarded by mu_
  Clock::time_point next_send_{};       // no send before this; guarded by mu_
  std::thread thread_;                  // started by the first record() under mu_, joined by stop()
};

}  // namespace reprise::worker
