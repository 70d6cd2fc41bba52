// The stackful style: a workflow written as a plain function that runs on a
// stack of its own (Boost.Context), so the helpers it calls wait on
// activities, timers and signals as ordinary functions, not coroutines.
//
//   std::string checkout(reprise::StackfulContext& ctx, Order order) {
//     auto receipt = ctx.execute(charge, reprise::ActivityOptions::start_to_close(30s), order).get();
//     ctx.sleep(24h);
//     return receipt;
//   }
//   inline constexpr reprise::WorkflowDef<&checkout> checkout_wf{"checkout"};
//
// The style is the function's signature: `R f(reprise::StackfulContext&, Args...)`
// is stackful, `reprise::Workflow<R> f(reprise::WorkflowContext&, Args...)` is
// stackless. Handles, compile-time checks, commands, history, replay, the
// cache and the failure policy are the same: underneath, a stackful workflow
// is a small coroutine that switches onto the stack for each activation and
// awaits, for the code on it, whatever that code waits for.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

#include "reprise/detail/fiber.hpp"
#include "reprise/workflow.hpp"

namespace reprise {

class StackfulContext;

namespace detail {

template <typename A>
using await_result_t = decltype(std::declval<std::remove_reference_t<A>&>().await_resume());

// Where a value of T lands once it exists (for void, that it happened).
template <typename T>
using Slot = std::optional<std::conditional_t<std::is_void_v<T>, bool, T>>;

template <typename F>
void store_result(Slot<std::invoke_result_t<F&>>& slot, F compute) {
  if constexpr (std::is_void_v<std::invoke_result_t<F&>>) {
    compute();
    slot.emplace(true);
  } else {
    slot.emplace(compute());
  }
}

// What `co_await awaitable` gives, as a value or as the exception it threw.
template <typename T>
struct AwaitOutcome {
  Slot<T> value;
  std::exception_ptr error;
};

// Awaits on behalf of code on a fiber. A is a reference: what it names lives
// on the fiber's stack, parked in wait_for until this completes.
template <typename T, typename A>
Task<void> await_into(A awaitable, AwaitOutcome<T>& out) {
  try {
    if constexpr (std::is_void_v<T>) {
      co_await std::forward<A>(awaitable);
      out.value.emplace(true);
    } else {
      out.value.emplace(co_await std::forward<A>(awaitable));
    }
  } catch (...) {
    out.error = std::current_exception();
  }
}

// One stackful workflow or branch: its fiber, and what the code on the
// fiber waits for while it is suspended.
class StackfulRun {
 public:
  explicit StackfulRun(StackOptions stack) : stack_(stack) {}

  void start(std::function<void()> body) { fiber_.emplace(stack_, std::move(body)); }

  // The driving coroutine's loop:
  //   while (!run.resume()) co_await run.take_blocked();
  bool resume() { return fiber_->resume(); }
  Task<void> take_blocked() {
    Task<void> blocked = std::move(*blocked_);
    blocked_.reset();
    return blocked;
  }
  void rethrow_if_failed() const {
    if (auto error = fiber_->error()) std::rethrow_exception(error);
  }

  // On the fiber: waits for `awaitable` without blocking the thread. The
  // driving coroutine awaits it and switches back here when it completes.
  template <typename A>
  await_result_t<A> wait_for(A&& awaitable) {
    using T = await_result_t<A>;
    if (awaitable.await_ready()) return awaitable.await_resume();
    AwaitOutcome<T> out;
    blocked_.emplace(await_into<T, A&&>(std::forward<A>(awaitable), out));
    fiber_->suspend();
    if (out.error) std::rethrow_exception(out.error);
    if constexpr (!std::is_void_v<T>) return std::move(*out.value);
  }

  StackOptions stack() const { return stack_; }

 private:
  StackOptions stack_;
  std::optional<Task<void>> blocked_;
  std::optional<Fiber> fiber_;  // last: destroyed (its stack unwound) first
};

}  // namespace detail

// A future in a stackful workflow: get() waits for it on the workflow's own
// stack. Start several, then get() each, to run them concurrently.
template <typename F>
class [[nodiscard]] Blocking {
 public:
  Blocking(F future, detail::StackfulRun& run) : future_(std::move(future)), run_(&run) {}

  // The value, or the error the future's co_await would throw.
  decltype(auto) get() { return run_->wait_for(future_); }
  bool ready() const { return future_.ready(); }
  void cancel() requires requires(F& f) { f.cancel(); }
  { future_.cancel(); }
  // The stackless future, for reprise::any and other awaitables.
  F& future() { return future_; }

 private:
  F future_;
  detail::StackfulRun* run_;
};

class StackfulContext {
 public:
  StackfulContext(const StackfulContext&) = delete;
  StackfulContext& operator=(const StackfulContext&) = delete;

  // --- work recorded in history: the same checks as WorkflowContext ---

  // Schedules an activity: ctx.execute(handle, options, args...).get().
  template <typename Handle, typename Options, typename... Args>
  auto execute(const Handle& handle, const Options& options, Args&&... args) {
    return wrap(ctx_.execute(handle, options, std::forward<Args>(args)...));
  }
  // Runs a local activity: ctx.execute_local(handle, options, args...).get().
  template <typename Handle, typename Options, typename... Args>
  auto execute_local(const Handle& handle, const Options& options, Args&&... args) {
    return wrap(ctx_.execute_local(handle, options, std::forward<Args>(args)...));
  }
  // Starts a child workflow (of either style).
  template <typename Handle, typename Options, typename... Args>
  auto execute_child(const Handle& handle, const Options& options, Args&&... args) {
    return wrap(ctx_.execute_child(handle, options, std::forward<Args>(args)...));
  }
  // Signals another workflow, or asks it to cancel: .get() returns once the
  // target has recorded it, or throws ExternalWorkflowError.
  template <typename T, typename V>
  Blocking<ExternalFuture> signal_external(const ExternalWorkflow& target, const Signal<T>& signal, const V& value) {
    return wrap(ctx_.signal_external(target, signal, value));
  }
  Blocking<ExternalFuture> cancel_external(const ExternalWorkflow& target, const std::string& reason = "") {
    return wrap(ctx_.cancel_external(target, reason));
  }
  // Ends this run and continues as a new one; does not return.
  template <typename Handle, typename... Args>
  [[noreturn]] void continue_as_new(const Handle& workflow, Args&&... args) {
    run_->wait_for(ctx_.continue_as_new(workflow, std::forward<Args>(args)...));
    throw std::logic_error("reprise: continue_as_new resumed");  // the runtime never resumes it
  }

  // A durable timer: returns after `duration` of workflow time.
  void sleep(std::chrono::nanoseconds duration) { run_->wait_for(ctx_.sleep(duration)); }
  // A timer to race against other futures with any().
  Blocking<TimerFuture> timer(std::chrono::nanoseconds duration) { return wrap(ctx_.sleep(duration)); }

  // The next value of `signal`.
  template <typename T>
  T wait(const Signal<T>& signal) {
    return run_->wait_for(ctx_.wait(signal));
  }
  // The next value of `signal`, or nullopt once `timeout` passes.
  template <typename T>
  std::optional<T> wait(const Signal<T>& signal, std::chrono::nanoseconds timeout) {
    return run_->wait_for(ctx_.wait(signal, timeout));
  }
  // A future of the next value of `signal`, to race with any().
  template <typename T>
  Blocking<SignalFuture<T>> next(const Signal<T>& signal) {
    return wrap(ctx_.wait(signal));
  }

  // The index of the first of `futures` to be ready (ties in history order, as any()).
  template <typename... Fs>
  size_t any(Blocking<Fs>&... futures) {
    return run_->wait_for(reprise::any(futures.future()...));
  }

  // Runs `body(StackfulContext&)` concurrently, on a stack of its own.
  template <typename Body>
  auto spawn(Body body) {
    using T = std::invoke_result_t<Body&, StackfulContext&>;
    return wrap(ctx_.spawn(run_branch<T>(ctx_.core_, ctx_.cancellable_, std::move(body), run_->stack())));
  }

  // Waits for any awaitable of the stackless API (a Task helper, all(...)).
  template <typename Awaitable>
  decltype(auto) wait_for(Awaitable&& awaitable) {
    return run_->wait_for(std::forward<Awaitable>(awaitable));
  }
  // The stackless context underneath, to start a Task helper for wait_for.
  WorkflowContext& workflow() { return ctx_; }

  // --- the rest, as WorkflowContext ---

  template <typename T, typename Handler>
  void on_query(const Query<T>& query, Handler handler) {
    ctx_.on_query(query, std::move(handler));
  }
  template <typename F>
  std::invoke_result_t<F&> side_effect(F compute) {
    return ctx_.side_effect(std::move(compute));
  }
  bool patched(const std::string& change_id) { return ctx_.patched(change_id); }
  // For cleanup after catching CanceledError.
  StackfulContext non_cancellable() { return StackfulContext(ctx_.core_, false, run_); }
  bool cancel_requested() const { return ctx_.cancel_requested(); }
  uint64_t random() { return ctx_.random(); }
  std::string uuid() { return ctx_.uuid(); }
  const WorkflowInfo& info() const { return ctx_.info(); }
  WorkflowLogger logger() const { return ctx_.logger(); }
  void log(const std::string& message) const { ctx_.log(message); }
  TimePoint now() const { return ctx_.now(); }
  bool replaying() const { return ctx_.replaying(); }

  // The coroutine the worker runs for a stackful workflow `Fn`: the call on
  // its own stack, driven one activation at a time.
  template <auto Fn, typename... Args>
  static auto run_workflow(WorkflowContext& workflow_ctx, std::tuple<Args...> args, StackOptions stack)
      -> Workflow<typename detail::WorkflowSignature<decltype(Fn)>::result> {
    using R = typename detail::WorkflowSignature<decltype(Fn)>::result;
    detail::Slot<R> result;
    StackfulContext ctx(workflow_ctx.core_, workflow_ctx.cancellable_, nullptr);
    detail::StackfulRun run(stack);  // after ctx and result: its stack is unwound while they live
    ctx.run_ = &run;
    run.start([&] {
      detail::store_result(result,
                           [&] { return std::apply([&](Args&... a) { return Fn(ctx, std::move(a)...); }, args); });
    });
    while (!run.resume()) co_await run.take_blocked();
    run.rethrow_if_failed();
    if constexpr (!std::is_void_v<R>) co_return std::move(*result);
  }

 private:
  StackfulContext(detail::WorkflowCore& core, bool cancellable, detail::StackfulRun* run)
      : ctx_(core, cancellable), run_(run) {}

  template <typename F>
  Blocking<F> wrap(F future) {
    return Blocking<F>(std::move(future), *run_);
  }

  // A branch: its own fiber, driven by a Task the runtime runs as a branch.
  template <typename T, typename Body>
  static Task<T> run_branch(detail::WorkflowCore& core, bool cancellable, Body body, StackOptions stack) {
    detail::Slot<T> result;
    StackfulContext ctx(core, cancellable, nullptr);
    detail::StackfulRun run(stack);
    ctx.run_ = &run;
    run.start([&] { detail::store_result(result, [&] { return body(ctx); }); });
    while (!run.resume()) co_await run.take_blocked();
    run.rethrow_if_failed();
    if constexpr (!std::is_void_v<T>) co_return std::move(*result);
  }

  WorkflowContext ctx_;
  detail::StackfulRun* run_;
};

}  // namespace reprise
