// Writing workflows: the coroutine types, the context a workflow receives,
// and the typed handles it calls activities through.
//
//   std::string charge(reprise::ActivityContext&, Order);
//   inline constexpr reprise::Activity<&charge> charge_card{"charge"};
//
//   reprise::Workflow<std::string> checkout(reprise::WorkflowContext& ctx, Order o) {
//     auto receipt = co_await ctx.execute(charge_card, reprise::ActivityOptions::start_to_close(30s), o);
//     co_await ctx.sleep(24h);
//     co_return receipt;
//   }
//
// A workflow runs on one worker thread at a time; the runtime resumes its
// ready coroutines in a fixed order, so replaying its history reproduces it.
// Everything that varies between runs (time, randomness, I/O) must come from
// the context or from an activity.
#pragma once

#include <chrono>
#include <coroutine>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "history/proto_time.hpp"
#include "history/uuid.hpp"
#include "reprise/codec.hpp"
#include "reprise/detail/core.hpp"

namespace reprise {

class WorkflowContext;
class ActivityContext;

// --- coroutine types ---

namespace detail {

template <typename T>
struct ResultSlot {
  std::variant<std::monostate, T, std::exception_ptr> value;
  void return_value(T v) { value.template emplace<1>(std::move(v)); }
  T take() {
    if (value.index() == 2) std::rethrow_exception(std::get<2>(value));
    return std::move(std::get<1>(value));
  }
};
template <>
struct ResultSlot<void> {
  std::exception_ptr error;
  bool done = false;
  void return_void() { done = true; }
  void take() {
    if (error) std::rethrow_exception(error);
  }
};

}  // namespace detail

// The coroutine type of a workflow function. Created suspended; the runtime
// starts it and owns its frame.
template <typename T = void>
class [[nodiscard]] Workflow {
 public:
  struct promise_type : detail::ResultSlot<T> {
    bool finished = false;
    Workflow get_return_object() { return Workflow(std::coroutine_handle<promise_type>::from_promise(*this)); }
    std::suspend_always initial_suspend() noexcept { return {}; }
    // Stays suspended at the end so the runtime reads the result, then frees it.
    auto final_suspend() noexcept {
      finished = true;
      return std::suspend_always{};
    }
    void unhandled_exception() {
      if constexpr (std::is_void_v<T>) {
        this->error = std::current_exception();
      } else {
        this->value.template emplace<2>(std::current_exception());
      }
    }
  };
  using value_type = T;

  Workflow(Workflow&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  Workflow& operator=(Workflow&& other) noexcept {
    if (this != &other) {
      if (handle_) handle_.destroy();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  ~Workflow() {
    if (handle_) handle_.destroy();
  }

  // For the runtime.
  std::coroutine_handle<> handle() const { return handle_; }
  bool finished() const { return handle_.promise().finished; }
  // The co_returned value, or the exception the workflow ended with.
  T result() { return handle_.promise().take(); }

 private:
  explicit Workflow(std::coroutine_handle<promise_type> h) : handle_(h) {}
  std::coroutine_handle<promise_type> handle_;
};

// A helper coroutine awaited inside a workflow. Lazy: it starts when awaited
// and resumes its awaiter when it finishes.
template <typename T = void>
class [[nodiscard]] Task {
 public:
  using value_type = T;
  struct promise_type : detail::ResultSlot<T> {
    std::coroutine_handle<> continuation;
    Task get_return_object() { return Task(std::coroutine_handle<promise_type>::from_promise(*this)); }
    std::suspend_always initial_suspend() noexcept { return {}; }
    struct FinalAwaiter {
      bool await_ready() noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
        return h.promise().continuation ? h.promise().continuation : std::noop_coroutine();
      }
      void await_resume() noexcept {}
    };
    FinalAwaiter final_suspend() noexcept { return {}; }
    void unhandled_exception() {
      if constexpr (std::is_void_v<T>) {
        this->error = std::current_exception();
      } else {
        this->value.template emplace<2>(std::current_exception());
      }
    }
  };

  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  Task(const Task&) = delete;
  ~Task() {
    if (handle_) handle_.destroy();
  }

  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiter) noexcept {
    handle_.promise().continuation = awaiter;
    return handle_;
  }
  T await_resume() { return handle_.promise().take(); }

 private:
  explicit Task(std::coroutine_handle<promise_type> h) : handle_(h) {}
  std::coroutine_handle<promise_type> handle_;
};

// --- options and handles ---

// How an activity runs. There is no default: every activity needs a bound on
// how long it may take, so options start from one of the two timeouts.
class ActivityOptions {
 public:
  static ActivityOptions start_to_close(std::chrono::nanoseconds timeout) {
    ActivityOptions o;
    o.start_to_close_ = timeout;
    return o;
  }
  static ActivityOptions schedule_to_close(std::chrono::nanoseconds timeout) {
    ActivityOptions o;
    o.schedule_to_close_ = timeout;
    return o;
  }
  ActivityOptions& heartbeat(std::chrono::nanoseconds timeout) {
    heartbeat_ = timeout;
    return *this;
  }
  ActivityOptions& schedule_to_start(std::chrono::nanoseconds timeout) {
    schedule_to_start_ = timeout;
    return *this;
  }
  ActivityOptions& task_queue(std::string queue) {
    task_queue_ = std::move(queue);
    return *this;
  }
  ActivityOptions& maximum_attempts(int attempts) {
    retry_.set_maximum_attempts(attempts);
    return *this;
  }
  ActivityOptions& retry_initial_interval(std::chrono::nanoseconds interval) {
    set_duration(retry_.mutable_initial_interval(), interval);
    return *this;
  }
  ActivityOptions& non_retryable(std::string error_type) {
    retry_.add_non_retryable_error_types(std::move(error_type));
    return *this;
  }

  void apply(v1::ScheduleActivityTaskCommandAttributes& a) const {
    if (start_to_close_.count() > 0) set_duration(a.mutable_start_to_close_timeout(), start_to_close_);
    if (schedule_to_close_.count() > 0) set_duration(a.mutable_schedule_to_close_timeout(), schedule_to_close_);
    if (schedule_to_start_.count() > 0) set_duration(a.mutable_schedule_to_start_timeout(), schedule_to_start_);
    if (heartbeat_.count() > 0) set_duration(a.mutable_heartbeat_timeout(), heartbeat_);
    if (!task_queue_.empty()) a.mutable_task_queue()->set_name(task_queue_);
    *a.mutable_retry_policy() = retry_;
  }

 private:
  ActivityOptions() = default;
  std::chrono::nanoseconds start_to_close_{0}, schedule_to_close_{0}, schedule_to_start_{0}, heartbeat_{0};
  std::string task_queue_;
  v1::RetryPolicy retry_;
};

namespace detail {

template <typename F>
struct ActivitySignature;
template <typename R, typename... Args>
struct ActivitySignature<R (*)(ActivityContext&, Args...)> {
  using result = R;
  using args = std::tuple<std::decay_t<Args>...>;
};

}  // namespace detail

// A typed handle to an activity function `R f(ActivityContext&, Args...)`.
// The name is what history records: renaming the function does not break
// running workflows.
template <auto Fn>
struct Activity {
  using signature = detail::ActivitySignature<decltype(Fn)>;
  using result_type = typename signature::result;
  const char* name;
  constexpr explicit Activity(const char* activity_name) : name(activity_name) {}
};

namespace detail {

template <typename F>
struct WorkflowSignature;
template <typename R, typename... Args>
struct WorkflowSignature<Workflow<R> (*)(WorkflowContext&, Args...)> {
  static_assert((!std::is_reference_v<Args> && ...),
                "workflow parameters must be taken by value: a workflow coroutine outlives the call that started it");
  using result = R;
  using args = std::tuple<std::decay_t<Args>...>;
};

}  // namespace detail

// A typed handle to a workflow function `Workflow<R> f(WorkflowContext&, Args...)`,
// named as history records it.
template <auto Fn>
struct WorkflowDef {
  using signature = detail::WorkflowSignature<decltype(Fn)>;
  using result_type = typename signature::result;
  const char* name;
  constexpr explicit WorkflowDef(const char* workflow_name) : name(workflow_name) {}
};

// A typed signal: the workflow waits for values of T sent under this name.
template <Serializable T>
struct Signal {
  using value_type = T;
  const char* name;
  constexpr explicit Signal(const char* signal_name) : name(signal_name) {}
};

// A typed query: a read-only question about a workflow's current state.
template <Serializable T>
struct Query {
  using value_type = T;
  const char* name;
  constexpr explicit Query(const char* query_name) : name(query_name) {}
};

// --- awaitables ---

// The result of an activity, awaited with co_await: the value, or an
// ActivityError when it failed for good.
template <typename T>
class [[nodiscard]] ActivityFuture {
 public:
  explicit ActivityFuture(std::shared_ptr<detail::Pending> pending) : pending_(std::move(pending)) {}
  bool await_ready() const noexcept { return pending_->ready; }
  void await_suspend(std::coroutine_handle<> h) noexcept { pending_->waiter = h; }
  const std::shared_ptr<detail::Pending>& pending() const { return pending_; }
  T await_resume() const {
    if (pending_->failure) {
      const v1::Failure& f = *pending_->failure;
      const v1::Failure& cause = f.has_cause() ? f.cause() : f;
      throw ActivityError(pending_->name, cause.message().empty() ? f.message() : cause.message(), cause.type());
    }
    if constexpr (!std::is_void_v<T>) {
      if (pending_->result.payloads_size() != 1) {
        throw PayloadError("activity '" + pending_->name + "' returned " +
                           std::to_string(pending_->result.payloads_size()) + " values, the workflow expects 1");
      }
      return from_payload<T>(pending_->result.payloads(0), "the result of activity '" + pending_->name + "'");
    }
  }

 private:
  std::shared_ptr<detail::Pending> pending_;
};

class [[nodiscard]] TimerFuture {
 public:
  explicit TimerFuture(std::shared_ptr<detail::Pending> pending) : pending_(std::move(pending)) {}
  bool await_ready() const noexcept { return pending_->ready; }
  void await_suspend(std::coroutine_handle<> h) noexcept { pending_->waiter = h; }
  const std::shared_ptr<detail::Pending>& pending() const { return pending_; }
  void await_resume() const {}

 private:
  std::shared_ptr<detail::Pending> pending_;
};

template <typename T>
class [[nodiscard]] SignalFuture {
 public:
  explicit SignalFuture(std::shared_ptr<detail::Pending> pending) : pending_(std::move(pending)) {}
  bool await_ready() const noexcept { return pending_->ready; }
  void await_suspend(std::coroutine_handle<> h) noexcept { pending_->waiter = h; }
  const std::shared_ptr<detail::Pending>& pending() const { return pending_; }
  T await_resume() const {
    if (pending_->result.payloads_size() != 1) {
      throw PayloadError("signal '" + pending_->name + "' carried " + std::to_string(pending_->result.payloads_size()) +
                         " values, the workflow expects 1");
    }
    return from_payload<T>(pending_->result.payloads(0), "the value of signal '" + pending_->name + "'");
  }

 private:
  std::shared_ptr<detail::Pending> pending_;
};

// --- waiting for several ---

// The first of several futures to be ready: `co_await any(payment, timeout)`
// gives its index (ties go to the earlier argument, as history orders them).
// The others stay pending and may still be awaited.
class [[nodiscard]] AnyOf {
 public:
  explicit AnyOf(std::vector<std::shared_ptr<detail::Pending>> pendings) : pendings_(std::move(pendings)) {}
  bool await_ready() const noexcept {
    for (const auto& p : pendings_) {
      if (p->ready) return true;
    }
    return false;
  }
  void await_suspend(std::coroutine_handle<> h) noexcept {
    for (auto& p : pendings_) p->waiter = h;
  }
  size_t await_resume() const noexcept {
    size_t first = pendings_.size();
    for (size_t i = 0; i < pendings_.size(); ++i) {
      pendings_[i]->waiter = {};  // the losers must not resume this coroutine later
      if (pendings_[i]->ready && first == pendings_.size()) first = i;
    }
    return first;
  }

 private:
  std::vector<std::shared_ptr<detail::Pending>> pendings_;
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

// Every future's value, in argument order (std::monostate for a timer);
// the first failure is thrown. Start the work in separate statements, not
// inside the call: C++ leaves the order of a call's arguments to the
// compiler, and the order commands are issued must be the same on replay.
template <typename... Futures>
auto all(Futures... futures) -> Task<std::tuple<typename decltype(detail::await_value(futures))::value_type...>> {
  co_return std::tuple<typename decltype(detail::await_value(futures))::value_type...>{
      co_await detail::await_value(std::move(futures))...};
}

// --- the context ---

// What a workflow may do besides compute: everything here is recorded in
// history, so replay gives the same answers.
class WorkflowContext {
 public:
  explicit WorkflowContext(detail::WorkflowCore& core) : core_(core) {}
  WorkflowContext(const WorkflowContext&) = delete;

  // Schedules the activity and returns its future. The arguments must be
  // the activity's parameters (the compile-time layer checks them).
  template <auto Fn, typename... Args>
  ActivityFuture<typename Activity<Fn>::result_type> execute(const Activity<Fn>& activity,
                                                             const ActivityOptions& options, Args&&... args) {
    v1::ScheduleActivityTaskCommandAttributes a;
    a.mutable_activity_type()->set_name(activity.name);
    options.apply(a);
    *a.mutable_input() = to_payloads(args...);
    auto pending = core_.schedule_activity(std::move(a));
    pending->name = activity.name;
    return ActivityFuture<typename Activity<Fn>::result_type>(std::move(pending));
  }

  // A durable timer: the workflow resumes after `duration` of workflow time,
  // even across worker restarts.
  TimerFuture sleep(std::chrono::nanoseconds duration) { return TimerFuture(core_.start_timer(duration)); }

  // The next value of `signal` (already received, or when it arrives).
  template <typename T>
  SignalFuture<T> wait(const Signal<T>& signal) {
    auto pending = core_.next_signal(signal.name);
    pending->name = signal.name;
    return SignalFuture<T>(std::move(pending));
  }

  // Answers `query` with what `handler` returns. The handler reads the
  // workflow's state; it must not change it or wait.
  template <typename T, typename Handler>
  requires std::is_invocable_r_v<T, Handler&>
  void on_query(const Query<T>& query, Handler handler) {
    core_.set_query_handler(query.name, [handler = std::move(handler)]() mutable {
      v1::Payloads out;
      *out.add_payloads() = to_payload<T>(handler());
      return out;
    });
  }

  // Randomness that replays: a 64-bit number, or a version-4 UUID, from the
  // workflow's own sequence. Seed a generator with random() if you need more.
  uint64_t random() { return core_.next_random(); }
  std::string uuid() {
    const uint64_t hi = core_.next_random(), lo = core_.next_random();
    return history::format_uuid_v4(hi, lo);
  }

  const WorkflowInfo& info() const { return core_.info(); }

  // Writes `message` to stderr as a logfmt line with the workflow's ids, but
  // only when the code runs for the first time, not while it replays.
  void log(const std::string& message) const {
    if (core_.replaying()) return;
    const WorkflowInfo& i = core_.info();
    std::string line = "level=info workflow_id=" + i.workflow_id + " run_id=" + i.run_id + " msg=\"";
    for (char c : message) line += c == '"' ? std::string("\\\"") : c == '\n' ? std::string("\\n") : std::string(1, c);
    line += "\"\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
  }

  // Workflow time: when the current workflow task started (the same on replay).
  TimePoint now() const { return core_.now(); }
  bool replaying() const { return core_.replaying(); }

 private:
  detail::WorkflowCore& core_;
};

}  // namespace reprise
