// Typed handles: an activity, a workflow, a signal or a query named as
// history records it, carrying the function's signature so every call
// through it is checked at compile time. Included by <reprise/workflow.hpp>.
#pragma once

#include <tuple>
#include <type_traits>

#include "reprise/codec.hpp"
#include "reprise/coroutine.hpp"

namespace reprise {

class WorkflowContext;
class ActivityContext;

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

}  // namespace reprise
