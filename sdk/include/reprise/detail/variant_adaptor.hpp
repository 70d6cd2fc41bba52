// msgpack-cxx has no std::variant adaptor: a variant travels as the array
// [index, value], and decoding builds the alternative the index names.
#pragma once

#ifndef MSGPACK_NO_BOOST
#define MSGPACK_NO_BOOST
#endif
#include <cstddef>
#include <msgpack.hpp>
#include <variant>

namespace msgpack {
MSGPACK_API_VERSION_NAMESPACE(MSGPACK_DEFAULT_API_NS) {
  namespace adaptor {

  template <typename... Ts>
  struct convert<std::variant<Ts...>> {
    const msgpack::object& operator()(const msgpack::object& o, std::variant<Ts...>& v) const {
      if (o.type != msgpack::type::ARRAY || o.via.array.size != 2) throw msgpack::type_error();
      const auto index = o.via.array.ptr[0].as<std::size_t>();
      if (index >= sizeof...(Ts)) throw msgpack::type_error();
      assign<0>(index, o.via.array.ptr[1], v);
      return o;
    }

   private:
    template <std::size_t I>
    static void assign(std::size_t index, const msgpack::object& value, std::variant<Ts...>& v) {
      if constexpr (I < sizeof...(Ts)) {
        if (index == I) {
          v.template emplace<I>(value.as<std::variant_alternative_t<I, std::variant<Ts...>>>());
        } else {
          assign<I + 1>(index, value, v);
        }
      }
    }
  };

  template <typename... Ts>
  struct pack<std::variant<Ts...>> {
    template <typename Stream>
    msgpack::packer<Stream>& operator()(msgpack::packer<Stream>& o, const std::variant<Ts...>& v) const {
      o.pack_array(2);
      o.pack(static_cast<uint64_t>(v.index()));
      std::visit([&o](const auto& alternative) { o.pack(alternative); }, v);
      return o;
    }
  };

  }  // namespace adaptor
}  // MSGPACK_API_VERSION_NAMESPACE(MSGPACK_DEFAULT_API_NS)
}  // namespace msgpack
