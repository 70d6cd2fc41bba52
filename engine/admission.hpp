// RequestAdmission: back-pressure at the door. A client's or worker's
// request that will change an execution takes a slot and holds it until it
// has answered; with every slot taken, a new request is refused at once
// (RESOURCE_EXHAUSTED, which callers retry) instead of queuing without end.
// Queries, which wait for a worker's answer, pass a door of their own (an
// instance with max_pending_queries), so waiting queries never take the
// slots of requests that change executions.
// Everything the engine queues — the executor's jobs, the per-execution
// queues, the store's writer queue — grows only with admitted requests and
// with work the engine bounds itself (timers in flight, transfers of
// committed tasks), so bounding the door bounds them all.
//
// Thread safety: any thread. A slot may be released on any thread, and
// after the RequestAdmission is gone: it shares only the count. (The last
// copy of a request's reply, which holds its slot, can die after the engine
// did: the store's writer clears a finished batch after answering it.)
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

namespace reprise::engine {

class RequestAdmission {
 public:
  // Held while an admitted request is in flight; released on destruction.
  using Slot = std::shared_ptr<void>;

  explicit RequestAdmission(size_t limit) : limit_(limit), in_flight_(std::make_shared<std::atomic<size_t>>(0)) {}

  // A slot, or nullptr when `limit` requests are in flight already.
  Slot try_admit() {
    if (in_flight_->fetch_add(1, std::memory_order_relaxed) >= limit_) {
      in_flight_->fetch_sub(1, std::memory_order_relaxed);
      return nullptr;
    }
    return Slot(in_flight_.get(), [count = in_flight_](void*) { count->fetch_sub(1, std::memory_order_relaxed); });
  }

  size_t in_flight() const { return in_flight_->load(std::memory_order_relaxed); }
  size_t limit() const { return limit_; }

 private:
  const size_t limit_;
  const std::shared_ptr<std::atomic<size_t>> in_flight_;
};

}  // namespace reprise::engine
