// What workflow code awaits: the futures of activities, timers, signals,
// child workflows, requests to other workflows and spawned branches, and
// any()/all() over several.
// Included by <reprise/workflow.hpp>.
#pragma once

#include <coroutine>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

#include "reprise/codec.hpp"
#include "reprise/coroutine.hpp"
#include "reprise/detail/core.hpp"
#include "reprise/errors.hpp"

namespace reprise {

namespace detail {

// What every future shares: the pending result the runtime resolves, and
// the awaiter protocol. A canceled result throws CanceledError when awaited.
class FutureBase {
 public:
  explicit FutureBase(std::shared_ptr<Pending> pending) : pending_(std::move(pending)) {}
  bool await_ready() const noexcept { return pending_->ready; }
  // Any number of coroutines may wait for the same future (the body and a
  // branch on one timer): each is resumed, in the order it began to wait.
  void await_suspend(std::coroutine_handle<> h) { pending_->waiters.push_back(h); }
  const std::shared_ptr<Pending>& pending() const { return pending_; }
  bool ready() const { return pending_->ready; }

 protected:
  void throw_if_canceled(const char* what) const {
    if (pending_->canceled) throw CanceledError(std::string(what) + " '" + pending_->name + "' was canceled");
  }
  // The single value of a result, decoded as T.
  template <typename T>
  T single_value(const char* what) const {
    if (pending_->result.payloads_size() != 1) {
      throw PayloadError(std::string(what) + " '" + pending_->name + "' gave " +
                         std::to_string(pending_->result.payloads_size()) + " values, the workflow expects 1");
    }
    WorkflowCore* core = pending_->core;
    return from_payload<T>(pending_->result.payloads(0),
                           "the value of " + std::string(what) + " '" + pending_->name + "'",
                           [core](const v1::Payload& p) { return core->load_payload(p); });
  }
  // Asks the runtime to cancel the work: the right command when history
  // already has it, nothing when it was issued in this same activation.
  void cancel_pending() {
    if (!pending_->ready && pending_->core != nullptr) pending_->core->cancel(pending_);
  }

  std::shared_ptr<Pending> pending_;
};

}  // namespace detail

// The result of an activity: the value, ActivityError when it failed for
// good, CanceledError when it was canceled.
template <typename T>
class [[nodiscard]] ActivityFuture : public detail::FutureBase {
 public:
  using FutureBase::FutureBase;
  // Requests cancellation (the activity sees it at its next heartbeat); the
  // future resolves as canceled at once.
  void cancel() { cancel_pending(); }
  T await_resume() const {
    throw_if_canceled("activity");
    if (pending_->failure) {
      const v1::Failure& f = *pending_->failure;
      const v1::Failure& cause = f.has_cause() ? f.cause() : f;
      throw ActivityError(pending_->name, cause.message().empty() ? f.message() : cause.message(), cause.type());
    }
    if constexpr (!std::is_void_v<T>) return single_value<T>("activity");
  }
};

// A durable timer; cancel() stops it and the future resolves as canceled.
class [[nodiscard]] TimerFuture : public detail::FutureBase {
 public:
  using FutureBase::FutureBase;
  void cancel() { cancel_pending(); }
  void await_resume() const { throw_if_canceled("timer"); }
};

template <typename T>
class [[nodiscard]] SignalFuture : public detail::FutureBase {
 public:
  using FutureBase::FutureBase;
  // Stops waiting; a value arriving later stays buffered for the next wait.
  void cancel() { cancel_pending(); }
  T await_resume() const {
    throw_if_canceled("wait for signal");
    pending_->value_taken = true;
    return single_value<T>("signal");
  }
};

// The result of a child workflow: its value, or ChildWorkflowError.
// Canceling the wait (or the parent) does not stop the child: its parent
// close policy decides what happens to it when the parent closes.
template <typename T>
class [[nodiscard]] ChildWorkflowFuture : public detail::FutureBase {
 public:
  using FutureBase::FutureBase;
  T await_resume() const {
    throw_if_canceled("wait for child workflow");
    if (pending_->failure) {
      const v1::Failure& f = *pending_->failure;
      const v1::Failure& cause = f.has_cause() ? f.cause() : f;
      throw ChildWorkflowError(pending_->name, f.message(), cause.type());
    }
    if constexpr (!std::is_void_v<T>) return single_value<T>("child workflow");
  }
  // The child's workflow id (given in its options, or the one derived for it).
  const std::string& workflow_id() const { return pending_->name; }
};

// A signal or cancel request sent to another workflow: resolves once the
// target has recorded it (the signal is in its history, or its cancel was
// requested); ExternalWorkflowError when it could not be delivered.
// A request history has recorded is delivered even if this workflow is
// canceled meanwhile: there is no cancel().
class [[nodiscard]] ExternalFuture : public detail::FutureBase {
 public:
  ExternalFuture(std::shared_ptr<detail::Pending> pending, std::string workflow_id)
      : FutureBase(std::move(pending)), workflow_id_(std::move(workflow_id)) {}
  void await_resume() const {
    if (pending_->canceled) throw CanceledError(pending_->name + " was canceled");
    if (pending_->failure) {
      throw ExternalWorkflowError(workflow_id_, pending_->failure->message(), pending_->failure->type());
    }
  }

 private:
  std::string workflow_id_;
};

namespace detail {

template <typename T>
struct BranchState : Pending {
  std::conditional_t<std::is_void_v<T>, std::monostate, std::optional<T>> value;
  std::exception_ptr error;
};

}  // namespace detail

// A branch started with ctx.spawn(task): its value, or what it threw.
template <typename T>
class [[nodiscard]] BranchFuture : public detail::FutureBase {
 public:
  explicit BranchFuture(std::shared_ptr<detail::BranchState<T>> state) : FutureBase(state), state_(std::move(state)) {}
  T await_resume() const {
    if (state_->error) std::rethrow_exception(state_->error);
    if constexpr (!std::is_void_v<T>) return std::move(*state_->value);
  }

 private:
  std::shared_ptr<detail::BranchState<T>> state_;
};

// --- waiting for several ---

// The first of several futures to be ready: `co_await any(payment, timeout)`
// gives its index. When several are ready, the one history resolved first
// wins (a timer that fired before the signal arrived beats the signal, in
// whatever order they were passed). The others stay pending and may still
// be awaited or canceled; a signal wait that is dropped unread gives its
// value back for the next wait.
class [[nodiscard]] AnyOf {
 public:
  explicit AnyOf(std::vector<std::shared_ptr<detail::Pending>> pendings) : pendings_(std::move(pendings)) {}
  bool await_ready() const noexcept {
    for (const auto& p : pendings_) {
      if (p->ready) return true;
    }
    return false;
  }
  void await_suspend(std::coroutine_handle<> h) {
    waiting_ = h;
    for (auto& p : pendings_) p->waiters.push_back(h);
  }
  size_t await_resume() noexcept {
    size_t first = pendings_.size();
    for (size_t i = 0; i < pendings_.size(); ++i) {
      const detail::Pending& p = *pendings_[i];
      if (waiting_) std::erase(pendings_[i]->waiters, waiting_);  // the losers must not resume this coroutine later
      if (p.ready && (first == pendings_.size() || p.resolved_order < pendings_[first]->resolved_order)) first = i;
    }
    return first;
  }

 private:
  std::vector<std::shared_ptr<detail::Pending>> pendings_;
  std::coroutine_handle<> waiting_;
};

template <typename... Futures>
AnyOf any(const Futures&... futures) {
  return AnyOf({futures.pending()...});
}

namespace detail {

template <typename F>
auto await_value(F future) -> Task<std::conditional_t<std::is_void_v<decltype(future.await_resume())>, std::monostate,
                                                      decltype(future.await_resume())>> {
  if constexpr (std::is_void_v<decltype(future.await_resume())>) {
    co_await future;
    co_return std::monostate{};
  } else {
    co_return co_await future;
  }
}

}  // namespace detail

// Every future's value, in argument order (std::monostate for a timer).
// The futures are awaited in argument order, so the failure thrown is that
// of the first argument that failed, once every argument before it has
// resolved (a later argument's failure waits for the earlier ones). Start the work in separate statements, not
// inside the call: C++ leaves the order of a call's arguments to the
// compiler, and the order commands are issued must be the same on replay.
template <typename... Futures>
auto all(Futures... futures) -> Task<std::tuple<typename decltype(detail::await_value(futures))::value_type...>> {
  co_return std::tuple<typename decltype(detail::await_value(futures))::value_type...>{
      co_await detail::await_value(std::move(futures))...};
}

}  // namespace reprise
