// Typed handles: an activity, a workflow, a signal or a query named as
// history records it, carrying the function's signature so every call
// through it is checked at compile time. Included by <reprise/workflow.hpp>.
#pragma once

#include <tuple>
#include <type_traits>

#include "reprise/codec.hpp"
#include "reprise/coroutine.hpp"
#include "reprise/detail/call_checks.hpp"

namespace reprise {

class WorkflowContext;
class StackfulContext;
class ActivityContext;

namespace detail {

// A parameter that can travel through history: a Serializable value, taken
// by value or by const reference.
template <typename P>
inline constexpr bool transferable_param = (!std::is_reference_v<P> || (std::is_lvalue_reference_v<P> &&
                                                                        std::is_const_v<std::remove_reference_t<P>>)) &&
                                           Serializable<std::remove_cvref_t<P>>;

template <typename F>
struct ActivitySignature {
  static_assert(always_false<F>,
                "reprise: an activity is a function `R f(reprise::ActivityContext&, Args...)`; "
                "this one does not take reprise::ActivityContext& first");
  using result = void;
  using args = std::tuple<>;
};
template <typename R, typename... Args>
struct ActivitySignature<R (*)(ActivityContext&, Args...)> {
  static_assert((transferable_param<Args> && ...),
                "reprise: activity parameters must be Serializable values taken by value or const& "
                "(not pointers, non-const references, std::function, threads or mutexes): they travel through history");
  static_assert(std::is_void_v<R> || Serializable<R>, "reprise: an activity's result must be Serializable or void");
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
struct WorkflowSignature {
  static_assert(always_false<F>,
                "reprise: a workflow is a function `reprise::Workflow<R> f(reprise::WorkflowContext&, Args...)` "
                "or, stackful, `R f(reprise::StackfulContext&, Args...)`; this one is neither");
  using result = void;
  using args = std::tuple<>;
};
// The rules both styles share: parameters by value and Serializable, a
// Serializable result.
template <bool Stackful, typename R, typename... Args>
struct CheckedWorkflowSignature {
  static_assert((!std::is_reference_v<Args> && ...),
                "reprise: workflow parameters must be taken by value: a workflow outlives the call that started it");
  static_assert((Serializable<std::remove_cvref_t<Args>> && ...),
                "reprise: workflow parameters must be Serializable (not pointers, std::function, threads or mutexes): "
                "they travel through history");
  static_assert(std::is_void_v<R> || Serializable<R>, "reprise: a workflow's result must be Serializable or void");
  using result = R;
  using args = std::tuple<std::decay_t<Args>...>;
  static constexpr bool stackful = Stackful;
};
template <typename R, typename... Args>
struct WorkflowSignature<Workflow<R> (*)(WorkflowContext&, Args...)> : CheckedWorkflowSignature<false, R, Args...> {};
// The stackful style (reprise/stackful.hpp).
template <typename R, typename... Args>
struct WorkflowSignature<R (*)(StackfulContext&, Args...)> : CheckedWorkflowSignature<true, R, Args...> {};

}  // namespace detail

// A typed handle to a workflow function `Workflow<R> f(WorkflowContext&, Args...)`
// or, stackful, `R f(StackfulContext&, Args...)`, named as history records it.
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
