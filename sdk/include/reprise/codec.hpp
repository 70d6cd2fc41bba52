// How user values become payloads and back: msgpack (msgpack-cxx), one
// payload per argument, integers exactly as wide as their type.
//
// A type can travel if it is Serializable: arithmetic types, std::string,
// the standard containers, std::optional, std::pair/std::tuple of
// Serializable types, a struct with MSGPACK_DEFINE / MSGPACK_DEFINE_MAP, or a
// type whose msgpack adaptor you wrote and declared with
//   template <> inline constexpr bool reprise::serializable_v<Money> = true;
// Pointers, references, functions, threads and mutexes are not: a workflow's
// arguments outlive the process that made them. std::variant travels as
// [index, value].
//
// Payloads of 16 KiB or more are zstd-compressed when that makes them
// smaller. A Ref<T> is a value kept in the server's blob store and passed by
// reference: activities store and load it, workflows only pass it on.
#pragma once

#ifndef MSGPACK_NO_BOOST
#define MSGPACK_NO_BOOST
#endif
#include <array>
#include <cstdint>
#include <functional>
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
#include <variant>
#include <vector>

#include "reprise/detail/variant_adaptor.hpp"
#include "reprise/errors.hpp"
#include "reprise/export.hpp"
#include "reprise/v1/common.pb.h"

namespace reprise {

// A large value of type T kept in the server's blob store. History records
// only the reference, so a workflow can hand a 50 MB report from one
// activity to the next without loading it or bloating its history:
//   Ref<Report> build(ActivityContext& ctx, ...) { return ctx.store(report); }
//   void publish(ActivityContext& ctx, Ref<Report> r) { Report report = ctx.load(r); ... }
// A Ref travels only as a whole argument or result, not inside another value
// (the server must see it to keep the blob alive).
template <typename T>
class Ref {
 public:
  Ref() = default;
  // From a claim-check payload (what ActivityContext::store makes).
  explicit Ref(v1::Payload claim_check) : payload_(std::move(claim_check)) {}
  const v1::Payload& payload() const { return payload_; }
  int64_t stored_size() const { return payload_.external().size(); }
  bool empty() const { return !payload_.has_external(); }

 private:
  v1::Payload payload_;
};

}  // namespace reprise

// Inside another value a Ref would hide its blob from the server.
namespace msgpack {
MSGPACK_API_VERSION_NAMESPACE(MSGPACK_DEFAULT_API_NS) {
  namespace adaptor {
  template <typename T>
  struct pack<reprise::Ref<T>> {
    template <typename Stream>
    msgpack::packer<Stream>& operator()(msgpack::packer<Stream>& o, const reprise::Ref<T>&) const {
      static_assert(sizeof(T) == 0, "a reprise::Ref travels only as a whole argument or result, not inside a value");
      return o;
    }
  };
  }  // namespace adaptor
}  // MSGPACK_API_VERSION_NAMESPACE(MSGPACK_DEFAULT_API_NS)
}  // namespace msgpack

namespace reprise {

template <typename T>
struct is_ref : std::false_type {};
template <typename T>
struct is_ref<Ref<T>> : std::true_type {};

namespace detail {

// zstd for payloads of at least kCompressThreshold bytes (sdk/src/payload_compression.cpp).
inline constexpr size_t kCompressThreshold = 16 * 1024;
REPRISE_EXPORT void compress_if_large(v1::Payload& payload);
// The payload's msgpack bytes, decompressed when needed. Throws PayloadError.
REPRISE_EXPORT std::string uncompressed_bytes(const v1::Payload& payload, const std::string& what);

}  // namespace detail

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
template <typename... Ts>
struct is_serializable<std::variant<Ts...>> : std::conjunction<is_serializable<Ts>...> {};
template <typename T>
struct is_serializable<Ref<T>> : is_serializable<T> {};

// A value that can be an activity's or workflow's argument or result.
template <typename T>
concept Serializable = !std::is_pointer_v<T> && !std::is_reference_v<T> && is_serializable<T>::value;

inline constexpr const char* kMsgpackEncoding = "binary/msgpack";
inline constexpr const char* kNullEncoding = "binary/null";

template <Serializable T>
v1::Payload to_payload(const T& value) {
  if constexpr (is_ref<T>::value) {
    if (value.empty()) throw PayloadError("an empty Ref was passed: make one with ActivityContext::store");
    return value.payload();
  } else {
    msgpack::sbuffer buffer;
    msgpack::pack(buffer, value);
    v1::Payload p;
    (*p.mutable_metadata())["encoding"] = kMsgpackEncoding;
    p.set_data(buffer.data(), buffer.size());
    detail::compress_if_large(p);
    return p;
  }
}

inline v1::Payload null_payload() {
  v1::Payload p;
  (*p.mutable_metadata())["encoding"] = kNullEncoding;
  return p;
}

// Throws PayloadError naming `what` when the bytes are not a T. A
// claim-check payload must have been resolved first (unless T is a Ref).
template <Serializable T>
T from_payload(const v1::Payload& payload, const std::string& what) {
  if constexpr (is_ref<T>::value) {
    if (!payload.has_external()) {
      throw PayloadError(what + " is an inline value, the code expects a Ref (made by ActivityContext::store)");
    }
    return T(payload);
  } else {
    if (payload.has_external() && payload.data().empty()) {
      throw PayloadError(what + " is a claim-check reference that has not been resolved");
    }
    auto encoding = payload.metadata().find("encoding");
    if (encoding == payload.metadata().end() || encoding->second != kMsgpackEncoding) {
      throw PayloadError(what + " is not msgpack (encoding '" +
                         (encoding == payload.metadata().end() ? std::string() : encoding->second) + "')");
    }
    const bool compressed = payload.metadata().contains("compression");
    const std::string inflated = compressed ? detail::uncompressed_bytes(payload, what) : std::string();
    const std::string& bytes = compressed ? inflated : payload.data();
    try {
      // msgpack-c allocates an array's or map's elements when it reads the
      // header: bounded by the input's length (an element takes at least a
      // byte), a 5-byte array32 header cannot make it allocate gigabytes.
      const size_t n = bytes.size();
      msgpack::object_handle handle =
          msgpack::unpack(bytes.data(), n, nullptr, nullptr, msgpack::unpack_limit(n, n, n, n, n));
      return handle.get().as<T>();
    } catch (const std::exception& e) {
      throw PayloadError(what + " does not decode as the expected type: " + e.what());
    }
  }
}

// Fetches a claim-check payload's bytes (the worker's or client's blob
// cache); empty where none is connected.
using PayloadLoader = std::function<v1::Payload(const v1::Payload&)>;

// from_payload for a payload that may be a claim-check reference: a Ref<T>
// takes the reference as it is, any other T has the bytes fetched first.
template <Serializable T>
T from_payload(const v1::Payload& payload, const std::string& what, const PayloadLoader& load) {
  if constexpr (!is_ref<T>::value) {
    if (payload.has_external() && payload.data().empty()) {
      if (!load) throw PayloadError(what + " is a claim-check reference and no blob store is connected to fetch it");
      return from_payload<T>(load(payload), what);
    }
  }
  return from_payload<T>(payload, what);
}

// Arguments travel as one payload each, in order.
template <Serializable... Args>
v1::Payloads to_payloads(const Args&... args) {
  v1::Payloads out;
  ((*out.add_payloads() = to_payload(args)), ...);
  return out;
}

template <Serializable... Args>
std::tuple<Args...> from_payloads(const v1::Payloads& payloads, const std::string& what,
                                  const PayloadLoader& load = {}) {
  if (payloads.payloads_size() != static_cast<int>(sizeof...(Args))) {
    throw PayloadError(what + " has " + std::to_string(payloads.payloads_size()) + " values, the code expects " +
                       std::to_string(sizeof...(Args)));
  }
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::tuple<Args...>{
        from_payload<Args>(payloads.payloads(static_cast<int>(I)), what + " value " + std::to_string(I), load)...};
  }
  (std::index_sequence_for<Args...>{});
}

}  // namespace reprise
