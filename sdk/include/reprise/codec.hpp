// How user values become payloads and back: msgpack (msgpack-cxx), one
// payload per argument, integers exactly as wide as their type.
//
// A type can travel if it is Serializable: arithmetic types, std::string,
// the standard containers, std::optional, std::pair/std::tuple of
// Serializable types, a struct with MSGPACK_DEFINE / MSGPACK_DEFINE_MAP, or a
// type whose msgpack adaptor you wrote and declared with
//   template <> inline constexpr bool reprise::serializable_v<Money> = true;
// Pointers, references, functions, threads and mutexes are not: a workflow's
// arguments outlive the process that made them.
#pragma once

#ifndef MSGPACK_NO_BOOST
#define MSGPACK_NO_BOOST
#endif
#include <array>
#include <cstdint>
#include <map>
#include <msgpack.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "reprise/errors.hpp"
#include "reprise/v1/common.pb.h"

namespace reprise {

namespace detail {

template <typename T, typename = void>
struct has_msgpack_members : std::false_type {};
template <typename T>
struct has_msgpack_members<T, std::void_t<decltype(&T::template msgpack_pack<msgpack::packer<msgpack::sbuffer>>)>>
    : std::true_type {};

}  // namespace detail

// Opt-in for types with a hand-written msgpack adaptor.
template <typename T>
inline constexpr bool serializable_v = false;

template <typename T>
struct is_serializable : std::bool_constant<serializable_v<T> || std::is_arithmetic_v<T> || std::is_enum_v<T> ||
                                            detail::has_msgpack_members<T>::value> {};
template <>
struct is_serializable<std::string> : std::true_type {};
template <typename T, typename A>
struct is_serializable<std::vector<T, A>> : is_serializable<T> {};
template <typename T, std::size_t N>
struct is_serializable<std::array<T, N>> : is_serializable<T> {};
template <typename T, typename C, typename A>
struct is_serializable<std::set<T, C, A>> : is_serializable<T> {};
template <typename K, typename V, typename C, typename A>
struct is_serializable<std::map<K, V, C, A>> : std::conjunction<is_serializable<K>, is_serializable<V>> {};
template <typename K, typename V, typename H, typename E, typename A>
struct is_serializable<std::unordered_map<K, V, H, E, A>> : std::conjunction<is_serializable<K>, is_serializable<V>> {};
template <typename T>
struct is_serializable<std::optional<T>> : is_serializable<T> {};
template <typename A, typename B>
struct is_serializable<std::pair<A, B>> : std::conjunction<is_serializable<A>, is_serializable<B>> {};
template <typename... Ts>
struct is_serializable<std::tuple<Ts...>> : std::conjunction<is_serializable<Ts>...> {};

// A value that can be an activity's or workflow's argument or result.
template <typename T>
concept Serializable = !std::is_pointer_v<T> && !std::is_reference_v<T> && is_serializable<T>::value;

inline constexpr const char* kMsgpackEncoding = "binary/msgpack";
inline constexpr const char* kNullEncoding = "binary/null";

template <Serializable T>
v1::Payload to_payload(const T& value) {
  msgpack::sbuffer buffer;
  msgpack::pack(buffer, value);
  v1::Payload p;
  (*p.mutable_metadata())["encoding"] = kMsgpackEncoding;
  p.set_data(buffer.data(), buffer.size());
  return p;
}

inline v1::Payload null_payload() {
  v1::Payload p;
  (*p.mutable_metadata())["encoding"] = kNullEncoding;
  return p;
}

// Throws PayloadError naming `what` when the bytes are not a T.
template <Serializable T>
T from_payload(const v1::Payload& payload, const std::string& what) {
  if (payload.has_external() && payload.data().empty()) {
    throw PayloadError(what + " is a claim-check reference that has not been resolved");
  }
  auto encoding = payload.metadata().find("encoding");
  if (encoding == payload.metadata().end() || encoding->second != kMsgpackEncoding) {
    throw PayloadError(what + " is not msgpack (encoding '" +
                       (encoding == payload.metadata().end() ? std::string() : encoding->second) + "')");
  }
  try {
    msgpack::object_handle handle = msgpack::unpack(payload.data().data(), payload.data().size());
    return handle.get().as<T>();
  } catch (const std::exception& e) {
    throw PayloadError(what + " does not decode as the expected type: " + e.what());
  }
}

// Arguments travel as one payload each, in order.
template <Serializable... Args>
v1::Payloads to_payloads(const Args&... args) {
  v1::Payloads out;
  ((*out.add_payloads() = to_payload(args)), ...);
  return out;
}

template <Serializable... Args>
std::tuple<Args...> from_payloads(const v1::Payloads& payloads, const std::string& what) {
  if (payloads.payloads_size() != static_cast<int>(sizeof...(Args))) {
    throw PayloadError(what + " has " + std::to_string(payloads.payloads_size()) + " values, the code expects " +
                       std::to_string(sizeof...(Args)));
  }
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::tuple<Args...>{
        from_payload<Args>(payloads.payloads(static_cast<int>(I)), what + " value " + std::to_string(I))...};
  }
  (std::index_sequence_for<Args...>{});
}

}  // namespace reprise
