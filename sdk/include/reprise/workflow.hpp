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
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "reprise/codec.hpp"
#include "reprise/coroutine.hpp"
#include "reprise/detail/core.hpp"
#include "reprise/detail/uuid.hpp"
#include "reprise/futures.hpp"
#include "reprise/handles.hpp"
#include "reprise/options.hpp"

namespace reprise {

// Returned by ctx.continue_as_new(...): `co_await` it to end this run and
// start the next with new arguments. The awaiting coroutine never resumes.
class [[nodiscard]] ContinueAsNew {
 public:
  ContinueAsNew(detail::WorkflowCore& core, v1::ContinueAsNewWorkflowExecutionCommandAttributes attributes)
      : core_(core), attributes_(std::move(attributes)) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<>) { core_.continue_as_new(std::move(attributes_)); }
  void await_resume() const noexcept {}

 private:
  detail::WorkflowCore& core_;
  v1::ContinueAsNewWorkflowExecutionCommandAttributes attributes_;
};

// Replay-aware logging: a line per call the first time the code runs,
// nothing while it replays (so a line is written once per execution).
class WorkflowLogger {
 public:
  explicit WorkflowLogger(const detail::WorkflowCore& core) : core_(core) {}
  void info(const std::string& message) const { write("info", message); }
  void warn(const std::string& message) const { write("warn", message); }
  void error(const std::string& message) const { write("error", message); }

 private:
  void write(const char* level, const std::string& message) const {
    if (core_.replaying()) return;
    const WorkflowInfo& i = core_.info();
    std::string line =
        std::string("level=") + level + " workflow_id=" + i.workflow_id + " run_id=" + i.run_id + " msg=\"";
    for (char c : message) line += c == '"' ? std::string("\\\"") : c == '\n' ? std::string("\\n") : std::string(1, c);
    line += "\"\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
  const detail::WorkflowCore& core_;
};

namespace detail {

// Encodes call arguments as the function's declared parameter types, so a
// value converted on the way (an int for an int64_t) decodes as declared.
template <typename... Params, typename... Args>
v1::Payloads encode_as(std::tuple<Params...>*, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "wrong number of arguments for the function's parameters");
  return to_payloads(static_cast<Params>(std::forward<Args>(args))...);
}

}  // namespace detail

// What a workflow may do besides compute: everything here is recorded in
// history, so replay gives the same answers.
class WorkflowContext {
 public:
  explicit WorkflowContext(detail::WorkflowCore& core) : core_(core) {}
  WorkflowContext(const WorkflowContext&) = delete;

  // Schedules the activity and returns its future.
  template <auto Fn, typename... Args>
  ActivityFuture<typename Activity<Fn>::result_type> execute(const Activity<Fn>& activity,
                                                             const ActivityOptions& options, Args&&... args) {
    using Params = typename Activity<Fn>::signature::args;
    constexpr bool matches = detail::call_matches<Params, Args&&...>::value;
    static_assert(matches,
                  "reprise: ctx.execute: the arguments do not match the activity's parameters "
                  "(the error below names the activity, what it expects and what it was called with)");
    if constexpr (!matches) {
      (void)sizeof(detail::mismatch<detail::activity_call_mismatch, Fn, Params, Args...>);
      return ActivityFuture<typename Activity<Fn>::result_type>(nullptr);
    } else {
      v1::ScheduleActivityTaskCommandAttributes a;
      a.mutable_activity_type()->set_name(activity.name);
      options.apply(a);
      *a.mutable_input() = detail::encode_as(static_cast<Params*>(nullptr), std::forward<Args>(args)...);
      return ActivityFuture<typename Activity<Fn>::result_type>(core_.schedule_activity(std::move(a), cancellable_));
    }
  }
  // Child-workflow options where activity options belong.
  template <auto Fn, typename... Args>
  ActivityFuture<typename Activity<Fn>::result_type> execute(const Activity<Fn>&, const ChildWorkflowOptions&,
                                                             Args&&...) {
    static_assert(
        detail::always_false<Args...>,
        "reprise: ctx.execute takes reprise::ActivityOptions (made from a timeout), not ChildWorkflowOptions");
    return ActivityFuture<typename Activity<Fn>::result_type>(nullptr);
  }
  // A workflow handle where an activity belongs.
  template <auto Fn, typename Options, typename... Args>
  ChildWorkflowFuture<typename WorkflowDef<Fn>::result_type> execute(const WorkflowDef<Fn>&, const Options&,
                                                                     Args&&...) {
    static_assert(detail::always_false<Options>,
                  "reprise: ctx.execute runs activities; to run a workflow from a workflow, "
                  "use ctx.execute_child(workflow, reprise::ChildWorkflowOptions(), args...)");
    return ChildWorkflowFuture<typename WorkflowDef<Fn>::result_type>(nullptr);
  }

  // Runs the activity in this worker, inside the workflow task, and returns
  // its future (an ActivityError after its retries, as for execute). No
  // server round trip per attempt: its outcome is recorded as one marker
  // when the task completes, and replay reads it from there. For short work
  // (well under the workflow task timeout); at-least-once like any activity.
  template <auto Fn, typename... Args>
  ActivityFuture<typename Activity<Fn>::result_type> execute_local(const Activity<Fn>& activity,
                                                                   const LocalActivityOptions& options,
                                                                   Args&&... args) {
    using Params = typename Activity<Fn>::signature::args;
    constexpr bool matches = detail::call_matches<Params, Args&&...>::value;
    static_assert(matches,
                  "reprise: ctx.execute_local: the arguments do not match the activity's parameters "
                  "(the error below names the activity, what it expects and what it was called with)");
    if constexpr (!matches) {
      (void)sizeof(detail::mismatch<detail::activity_call_mismatch, Fn, Params, Args...>);
      return ActivityFuture<typename Activity<Fn>::result_type>(nullptr);
    } else {
      v1::ScheduleActivityTaskCommandAttributes a;
      a.mutable_activity_type()->set_name(activity.name);
      options.apply(a);
      *a.mutable_input() = detail::encode_as(static_cast<Params*>(nullptr), std::forward<Args>(args)...);
      return ActivityFuture<typename Activity<Fn>::result_type>(
          core_.schedule_local_activity(std::move(a), cancellable_));
    }
  }
  // Options of a normal activity where local-activity options belong.
  template <auto Fn, typename Options, typename... Args>
  ActivityFuture<typename Activity<Fn>::result_type> execute_local(const Activity<Fn>&, const Options&, Args&&...) {
    static_assert(detail::always_false<Options>,
                  "reprise: ctx.execute_local takes reprise::LocalActivityOptions (made from a timeout)");
    return ActivityFuture<typename Activity<Fn>::result_type>(nullptr);
  }
  // A workflow handle where an activity belongs.
  template <auto Fn, typename Options, typename... Args>
  ChildWorkflowFuture<typename WorkflowDef<Fn>::result_type> execute_local(const WorkflowDef<Fn>&, const Options&,
                                                                           Args&&...) {
    static_assert(detail::always_false<Options>,
                  "reprise: ctx.execute_local runs activities; to run a workflow from a workflow, "
                  "use ctx.execute_child(workflow, reprise::ChildWorkflowOptions(), args...)");
    return ChildWorkflowFuture<typename WorkflowDef<Fn>::result_type>(nullptr);
  }

  // Starts a child workflow and returns the future of its result.
  template <auto Fn, typename... Args>
  ChildWorkflowFuture<typename WorkflowDef<Fn>::result_type> execute_child(const WorkflowDef<Fn>& workflow,
                                                                           const ChildWorkflowOptions& options,
                                                                           Args&&... args) {
    using Params = typename WorkflowDef<Fn>::signature::args;
    constexpr bool matches = detail::call_matches<Params, Args&&...>::value;
    static_assert(matches,
                  "reprise: ctx.execute_child: the arguments do not match the child workflow's parameters "
                  "(the error below names the workflow, what it expects and what it was called with)");
    if constexpr (!matches) {
      (void)sizeof(detail::mismatch<detail::child_workflow_call_mismatch, Fn, Params, Args...>);
      return ChildWorkflowFuture<typename WorkflowDef<Fn>::result_type>(nullptr);
    } else {
      v1::StartChildWorkflowExecutionCommandAttributes a;
      a.mutable_workflow_type()->set_name(workflow.name);
      options.apply(a);
      *a.mutable_input() = detail::encode_as(static_cast<Params*>(nullptr), std::forward<Args>(args)...);
      return ChildWorkflowFuture<typename WorkflowDef<Fn>::result_type>(core_.start_child(std::move(a), cancellable_));
    }
  }
  // Activity options where child-workflow options belong.
  template <auto Fn, typename... Args>
  ChildWorkflowFuture<typename WorkflowDef<Fn>::result_type> execute_child(const WorkflowDef<Fn>&,
                                                                           const ActivityOptions&, Args&&...) {
    static_assert(detail::always_false<Args...>,
                  "reprise: ctx.execute_child takes reprise::ChildWorkflowOptions, not ActivityOptions");
    return ChildWorkflowFuture<typename WorkflowDef<Fn>::result_type>(nullptr);
  }
  // An activity handle where a workflow belongs.
  template <auto Fn, typename Options, typename... Args>
  ActivityFuture<typename Activity<Fn>::result_type> execute_child(const Activity<Fn>&, const Options&, Args&&...) {
    static_assert(
        detail::always_false<Options>,
        "reprise: ctx.execute_child starts workflows; run an activity with ctx.execute(activity, options, args...)");
    return ActivityFuture<typename Activity<Fn>::result_type>(nullptr);
  }

  // Sends `value` under `signal`'s name to another workflow: a workflow id
  // (its current run) or an ExternalWorkflow (a run id, child_workflow_only).
  // The future resolves once the target has recorded the signal, and throws
  // ExternalWorkflowError (cause NOT_FOUND or NOT_CHILD, naming the target)
  // when it could not be delivered.
  //   co_await ctx.signal_external("order-7", amend, change);
  template <typename T, typename V>
  ExternalFuture signal_external(const ExternalWorkflow& target, const Signal<T>& signal, const V& value) {
    constexpr bool matches = std::is_convertible_v<const V&, T>;
    static_assert(matches, "reprise: ctx.signal_external: the value is not of the Signal<T>'s type T");
    if constexpr (!matches) {
      return ExternalFuture(nullptr, target.workflow_id());
    } else {
      v1::SignalExternalWorkflowExecutionCommandAttributes a;
      target.apply(a);
      a.set_signal_name(signal.name);
      *a.mutable_input() = to_payloads(static_cast<T>(value));
      return ExternalFuture(core_.signal_external(std::move(a), cancellable_), target.workflow_id());
    }
  }

  // Asks another workflow to cancel (its code sees CanceledError, as after
  // WorkflowHandle::cancel). The future resolves once the target has
  // recorded the request, not when it closes; ExternalWorkflowError as for
  // signal_external.
  ExternalFuture cancel_external(const ExternalWorkflow& target, const std::string& reason = "") {
    v1::RequestCancelExternalWorkflowExecutionCommandAttributes a;
    target.apply(a);
    a.set_reason(reason);
    return ExternalFuture(core_.cancel_external(std::move(a), cancellable_), target.workflow_id());
  }

  // Ends this run and continues as a new run of `workflow` (usually this
  // one) with fresh arguments and an empty history:
  //   co_await ctx.continue_as_new(counter, next_state);
  template <auto Fn, typename... Args>
  ContinueAsNew continue_as_new(const WorkflowDef<Fn>& workflow, Args&&... args) {
    using Params = typename WorkflowDef<Fn>::signature::args;
    constexpr bool matches = detail::call_matches<Params, Args&&...>::value;
    static_assert(matches,
                  "reprise: ctx.continue_as_new: the arguments do not match the workflow's parameters "
                  "(the error below names the workflow, what it expects and what it was called with)");
    v1::ContinueAsNewWorkflowExecutionCommandAttributes a;
    a.mutable_workflow_type()->set_name(workflow.name);
    if constexpr (!matches) {
      (void)sizeof(detail::mismatch<detail::continue_as_new_mismatch, Fn, Params, Args...>);
    } else {
      *a.mutable_input() = detail::encode_as(static_cast<Params*>(nullptr), std::forward<Args>(args)...);
    }
    return ContinueAsNew(core_, std::move(a));
  }

  // A durable timer: the workflow resumes after `duration` of workflow time,
  // even across worker restarts.
  TimerFuture sleep(std::chrono::nanoseconds duration) {
    return TimerFuture(core_.start_timer(duration, cancellable_));
  }

  // The next value of `signal` (already received, or when it arrives).
  template <typename T>
  SignalFuture<T> wait(const Signal<T>& signal) {
    return SignalFuture<T>(core_.next_signal(signal.name, cancellable_));
  }

  // The next value of `signal`, or nullopt when `timeout` passes first (a
  // value arriving later stays buffered for the next wait).
  template <typename T>
  Task<std::optional<T>> wait(const Signal<T>& signal, std::chrono::nanoseconds timeout) {
    SignalFuture<T> value = wait(signal);
    TimerFuture timer = sleep(timeout);
    if (co_await any(value, timer) == 1) {
      value.cancel();
      co_return std::nullopt;
    }
    timer.cancel();
    co_return co_await value;
  }

  // Runs `branch` concurrently with the code that spawned it; the future
  // gives its value. Branches resume in the same deterministic order as
  // everything else.
  template <typename T>
  BranchFuture<T> spawn(Task<T> branch) {
    auto state = std::make_shared<detail::BranchState<T>>();
    state->kind = detail::Pending::Kind::kBranch;
    state->name = "branch";
    detail::Branch runner = run_branch(std::move(branch), state, core_);
    core_.spawn(runner.handle);
    return BranchFuture<T>(std::move(state));
  }

  // Answers `query` with what `handler` returns. The handler reads the
  // workflow's state; it must not change it or wait.
  template <typename T, typename Handler>
  void on_query(const Query<T>& query, Handler handler) {
    static_assert(std::is_invocable_v<Handler&>,
                  "reprise: a query handler takes no arguments: it reads the workflow's state");
    if constexpr (std::is_invocable_v<Handler&>) {
      static_assert(std::is_convertible_v<std::invoke_result_t<Handler&>, T>,
                    "reprise: the query handler must return the Query<T>'s type T");
    }
    core_.set_query_handler(query.name, [handler = std::move(handler)]() mutable {
      v1::Payloads out;
      *out.add_payloads() = to_payload<T>(handler());
      return out;
    });
  }

  // Runs `compute` once and records its value; replay returns the recorded
  // value instead of running it again. For small nondeterministic values
  // (an id from a library, a reading of configuration), not for I/O that
  // can fail: that is an activity.
  template <typename F>
  std::invoke_result_t<F&> side_effect(F compute) {
    using T = std::invoke_result_t<F&>;
    const v1::Payloads recorded = core_.side_effect([&] {
      v1::Payloads out;
      *out.add_payloads() = to_payload<T>(compute());
      return out;
    });
    return from_payload<T>(recorded.payloads(0), "a recorded side effect",
                           [this](const v1::Payload& p) { return core_.load_payload(p); });
  }

  // Changing code under running executions: `if (ctx.patched("fee-v2"))`
  // takes the new path in executions that reach it with the new code, and
  // the old path when replaying one that ran the old code there.
  bool patched(const std::string& change_id) { return core_.patched(change_id); }

  // A context whose work is not canceled when the workflow is: for cleanup
  // after catching CanceledError.
  //   catch (const reprise::CanceledError&) {
  //     auto cleanup = ctx.non_cancellable();
  //     co_await cleanup.execute(refund, options, order);
  //     throw;
  //   }
  WorkflowContext non_cancellable() { return WorkflowContext(core_, false); }

  // Whether a cancel of this workflow has been requested.
  bool cancel_requested() const { return core_.cancel_requested(); }

  // Randomness that replays: a 64-bit number, or a version-4 UUID, from the
  // workflow's own sequence. Seed a generator with random() if you need more.
  uint64_t random() { return core_.next_random(); }
  std::string uuid() {
    const uint64_t hi = core_.next_random(), lo = core_.next_random();
    return history::format_uuid_v4(hi, lo);
  }

  const WorkflowInfo& info() const { return core_.info(); }

  // A logger that writes logfmt lines with the workflow's ids to stderr,
  // but only when the code runs for the first time, not while it replays.
  WorkflowLogger logger() const { return WorkflowLogger(core_); }
  // logger().info(message).
  void log(const std::string& message) const { logger().info(message); }

  // Workflow time: when the current workflow task started (the same on replay).
  TimePoint now() const { return core_.now(); }
  bool replaying() const { return core_.replaying(); }

 private:
  friend class StackfulContext;  // the stackful style wraps this context
  WorkflowContext(detail::WorkflowCore& core, bool cancellable) : core_(core), cancellable_(cancellable) {}

  template <typename T>
  static detail::Branch run_branch(Task<T> task, std::shared_ptr<detail::BranchState<T>> state,
                                   detail::WorkflowCore& core) {
    try {
      if constexpr (std::is_void_v<T>) {
        co_await std::move(task);
      } else {
        state->value.emplace(co_await std::move(task));
      }
    } catch (...) {
      state->error = std::current_exception();
    }
    core.resolve(state);
  }

  detail::WorkflowCore& core_;
  bool cancellable_ = true;
};

}  // namespace reprise
