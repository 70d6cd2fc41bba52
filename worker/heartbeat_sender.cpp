#include "worker/heartbeat_sender.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <utility>

#include "history/status.hpp"
#include "reprise/client.hpp"

namespace reprise::worker {

HeartbeatSender::HeartbeatSender(Send send, std::chrono::nanoseconds interval, std::function<void()> on_cancel,
                                 std::string what)
    : send_(std::move(send)), interval_(interval), on_cancel_(std::move(on_cancel)), what_(std::move(what)) {}

HeartbeatSender::~HeartbeatSender() { stop(); }

std::chrono::nanoseconds HeartbeatSender::interval_for(std::chrono::nanoseconds heartbeat_timeout,
                                                       std::chrono::nanoseconds fallback,
                                                       std::chrono::nanoseconds max) {
  if (heartbeat_timeout.count() <= 0) return fallback;
  return std::min(heartbeat_timeout * 4 / 5, max);
}

bool HeartbeatSender::record(v1::Payloads details) {
  std::lock_guard lock(mu_);
  latest_ = std::move(details);
  unsent_ = true;
  if (!thread_.joinable() && !stopping_) {
    thread_ = std::thread([this] { run(); });
  } else {
    cv_.notify_one();
  }
  return cancel_;
}

void HeartbeatSender::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

std::optional<v1::Payloads> HeartbeatSender::latest() const {
  std::lock_guard lock(mu_);
  return latest_;
}

bool HeartbeatSender::cancel_requested() const {
  std::lock_guard lock(mu_);
  return cancel_;
}

void HeartbeatSender::log_failure(const char* error) const {
  std::fprintf(stderr, "level=warn msg=\"heartbeat failed, retrying\" activity=%s error=\"%s\"\n", what_.c_str(),
               error);
}

void HeartbeatSender::run() {
  bool failing = false;  // logged once per run of failures
  std::unique_lock lock(mu_);
  for (;;) {
    // Until there is something to send and the interval since the last
    // send is over; stop() ends the wait at once.
    while (!stopping_ && !(unsent_ && Clock::now() >= next_send_)) {
      if (unsent_) {
        cv_.wait_until(lock, next_send_);
      } else {
        cv_.wait(lock);
      }
    }
    if (stopping_) return;
    v1::Payloads details = *latest_;
    unsent_ = false;
    // Measured from the start of the call: a slow server does not stretch
    // the gap between the heartbeats it records beyond max(interval, RPC).
    next_send_ = Clock::now() + interval_;
    lock.unlock();
    std::optional<bool> canceled;  // nullopt: the call failed and is retried
    bool over = false;
    try {
      canceled = send_(details);
      failing = false;
    } catch (const RpcError& e) {
      if (e.code() == static_cast<int>(StatusCode::kNotFound)) {
        // The attempt is over (the workflow closed, the activity timed out
        // or was retried elsewhere): its work is no longer wanted, as if
        // canceled, and no later heartbeat can be recorded.
        canceled = over = true;
      } else if (!std::exchange(failing, true)) {
        log_failure(e.what());
      }
    } catch (const std::exception& e) {
      if (!std::exchange(failing, true)) log_failure(e.what());
    }
    lock.lock();
    const bool newly_canceled = canceled.value_or(false) && !cancel_;
    if (canceled.value_or(false)) cancel_ = true;
    if (!canceled) unsent_ = true;  // the latest details, these or newer, go at the next interval
    if (newly_canceled && on_cancel_) {
      lock.unlock();
      on_cancel_();
      lock.lock();
    }
    if (over) return;
  }
}

}  // namespace reprise::worker
