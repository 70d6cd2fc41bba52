// Helpers for v1::Payload: encoding metadata, zstd compression of large
// payloads, and claim-check references.
//
// A payload is one of:
//   inline      metadata["encoding"] names the encoding, `data` holds the bytes
//               (zstd-compressed when metadata["compression"] == "zstd");
//   claim-check `external` holds {sha256, size, encoding} and `data` is empty;
//               the bytes (compressed or not, per the metadata) are in the blob
//               store under that hash.
#pragma once

#include <string>
#include <string_view>

#include "history/sha256.hpp"
#include "history/status.hpp"
#include "history/zstd_codec.hpp"
#include "reprise/v1/common.pb.h"

namespace reprise::history {

namespace v1 = ::reprise::v1;

inline constexpr std::string_view kEncodingKey = "encoding";
inline constexpr std::string_view kCompressionKey = "compression";
inline constexpr std::string_view kEncodingMsgpack = "binary/msgpack";
inline constexpr std::string_view kEncodingJson = "json/plain";
inline constexpr std::string_view kEncodingNull = "binary/null";
inline constexpr std::string_view kCompressionZstd = "zstd";

v1::Payload make_payload(std::string_view encoding, std::string data);

// "" when the payload carries no encoding.
std::string_view payload_encoding(const v1::Payload& payload);
bool is_compressed(const v1::Payload& payload);
bool is_claim_check(const v1::Payload& payload);

// Compresses `data` in place when it is at least `threshold` bytes and
// compression actually makes it smaller.
Status compress_if_large(v1::Payload& payload, size_t threshold, ZstdCodec& zstd);
// The payload's bytes with compression undone. The payload must be inline.
Result<std::string> uncompressed_data(const v1::Payload& payload, ZstdCodec& zstd);

// Moves `data` out of the payload, leaving a reference to it. The caller
// stores the returned bytes in the blob store under ref.sha256 first.
std::string make_claim_check(v1::Payload& payload);
// Puts the bytes of a claim-check payload back inline, after checking that
// they match its hash and size.
Status resolve_claim_check(v1::Payload& payload, std::string bytes);

// Human-readable one-liner: "binary/msgpack 42 B", "claim-check sha256:3f2a…
// 50.0 MiB binary/msgpack".
std::string summarize(const v1::Payload& payload);

}  // namespace reprise::history
