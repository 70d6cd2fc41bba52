// Writing activities: plain functions `R fn(reprise::ActivityContext&, Args...)`
// run on the worker's activity pool. They may block and do I/O. A thrown
// reprise::ApplicationError fails the attempt with its type (non-retryable if
// it says so); any other exception is a retryable failure with its message.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "reprise/clock.hpp"
#include "reprise/codec.hpp"
#include "reprise/detail/blobs.hpp"
#include "reprise/v1/common.pb.h"

namespace reprise {

struct ActivityInfo {
  std::string workflow_id{};
  std::string run_id{};
  std::string activity_id{};
  std::string activity_type{};
  int attempt = 1;
  TimePoint scheduled_time{};  // of this attempt
  TimePoint started_time{};
  // When the attempt times out (the earlier of start-to-close and
  // schedule-to-close); nullopt when neither applies.
  std::optional<TimePoint> deadline{};
  std::chrono::nanoseconds heartbeat_timeout{0};  // 0: none
};

class ActivityContext {
 public:
  // `send_heartbeat` hands details to the worker, which sends them to the
  // server throttled, and answers whether cancellation is known; it must not
  // wait for an RPC. The worker provides it.
  // `blobs` is where store() and load() go (null: not connected).
  ActivityContext(ActivityInfo info, v1::Payloads last_details, std::function<bool(const v1::Payloads&)> send_heartbeat,
                  detail::Blobs* blobs = nullptr)
      : info_(std::move(info)),
        last_details_(std::move(last_details)),
        send_heartbeat_(std::move(send_heartbeat)),
        blobs_(blobs) {}

  const ActivityInfo& info() const { return info_; }

  // Records progress; a retry of this activity starts from the details of
  // the last heartbeat. Cheap enough for a tight loop: it never waits for the
  // server. The worker sends the first heartbeat at once and then at most one
  // per throttle interval, the latest details (0.8 × the heartbeat timeout, at
  // most WorkerOptions::max_heartbeat_throttle_interval; without a heartbeat
  // timeout, default_heartbeat_throttle_interval). Details still unsent when
  // the attempt fails go with the failure; after a completion or a
  // cancellation nobody reads them, and they are dropped. The answer to each
  // heartbeat tells whether the workflow asked to cancel (cancel_requested()),
  // so a cancellation reaches a heartbeating activity within about one interval.
  template <Serializable... T>
  void heartbeat(const T&... details) {
    if (send_heartbeat_(to_payloads(details...))) cancel_requested_ = true;
  }
  // True once a heartbeat learned that the workflow canceled this activity
  // or that its attempt is over (the workflow closed, it timed out), or the
  // worker is shutting down and its grace ran out. Stop and throw
  // reprise::CanceledError to end it as canceled.
  bool cancel_requested() const { return cancel_requested_; }
  // For the worker: the activity is asked to stop (a heartbeat's answer said
  // so, or the shutdown grace ran out). Any thread.
  void request_cancel() { cancel_requested_ = true; }

  // The details of the previous attempt's last heartbeat, if any.
  template <Serializable T>
  std::optional<T> last_heartbeat() const {
    if (last_details_.payloads_size() == 0) return std::nullopt;
    return from_payload<T>(last_details_.payloads(0), "the last heartbeat of activity '" + info_.activity_type + "'",
                           loader());
  }

  // Puts `value` in the server's blob store and returns a reference to pass
  // to other activities through the workflow, which never loads it.
  template <Serializable T>
  Ref<T> store(const T& value) {
    v1::Payload payload = to_payload(value);
    connected().store(payload);
    return Ref<T>(std::move(payload));
  }
  // The value a Ref stands for, fetched from the blob store (cached).
  template <Serializable T>
  T load(const Ref<T>& ref) {
    return from_payload<T>(connected().resolve(ref.payload()), "a Ref in activity '" + info_.activity_type + "'");
  }

  PayloadLoader loader() const {
    if (blobs_ == nullptr) return {};
    return [blobs = blobs_](const v1::Payload& p) { return blobs->resolve(p); };
  }

 private:
  ActivityInfo info_;
  v1::Payloads last_details_;
  std::function<bool(const v1::Payloads&)> send_heartbeat_;
  std::atomic<bool> cancel_requested_{false};
  detail::Blobs* blobs_;

  detail::Blobs& connected() {
    if (blobs_ == nullptr) throw Error("activity '" + info_.activity_type + "' has no blob store connected");
    return *blobs_;
  }
};

}  // namespace reprise
