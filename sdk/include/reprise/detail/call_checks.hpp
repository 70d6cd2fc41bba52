// Compile-time checks of calls through typed handles, made to read well.
// A mismatched call fails a static_assert whose message says what is wrong,
// and then names an incomplete type that spells out the details, e.g.
//   reprise::detail::activity_call_mismatch<reprise::detail::function<charge>,
//       reprise::detail::expects<Order>, reprise::detail::but_was_called_with<int>>
// (C++20 static_assert messages cannot be built from types; a type's name can.)
#pragma once

#include <tuple>
#include <type_traits>

namespace reprise::detail {

template <typename...>
inline constexpr bool always_false = false;

// Names of the details, shown by the compiler.
template <auto Fn>
struct function {};
template <typename... Params>
struct expects {};
template <typename... Args>
struct but_was_called_with {};

// Never defined: a call that does not match makes the compiler name one.
template <typename Function, typename Expects, typename Called>
struct activity_call_mismatch;
template <typename Function, typename Expects, typename Called>
struct child_workflow_call_mismatch;
template <typename Function, typename Expects, typename Called>
struct continue_as_new_mismatch;
template <typename Function, typename Expects, typename Called>
struct workflow_start_mismatch;

// Whether arguments `Args` can be passed for parameters `Params` (a tuple).
template <typename Params, typename... Args>
struct call_matches : std::false_type {};
template <typename... Params, typename... Args>
requires(sizeof...(Params) == sizeof...(Args)) struct call_matches<std::tuple<Params...>, Args...>
    : std::bool_constant<(std::is_convertible_v<Args, Params> && ...)> {
};

template <typename Params>
struct expects_of;
template <typename... Params>
struct expects_of<std::tuple<Params...>> {
  using type = expects<Params...>;
};

// The type a call that does not match names, through sizeof on it:
//   Mismatch<function<Fn>, expects<...>, but_was_called_with<...>>
template <template <typename, typename, typename> class Mismatch, auto Fn, typename Params, typename... Args>
using mismatch =
    Mismatch<function<Fn>, typename expects_of<Params>::type, but_was_called_with<std::remove_cvref_t<Args>...>>;

}  // namespace reprise::detail
