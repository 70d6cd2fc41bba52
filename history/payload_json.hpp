// JSON values as msgpack payloads (integers exact), and a payload as a JSON
// value, for people to read: the command line's
// `workflow show` and `history`, and the server's web UI. msgpack is decoded
// and compression undone; nothing here throws on what a payload holds.
//
// Thread safety: any thread (each keeps its own decompression context).
#pragma once

#include <nlohmann/json.hpp>

#include "history/status.hpp"
#include "reprise/v1/common.pb.h"

namespace reprise::history {

// The payload's decoded msgpack, null for a void value,
// {"$ref": "sha256:<hex>", "size": N} for a claim-check reference,
// {"$encoding": …, "$bytes": N} for an encoding other than msgpack, and the
// same with "$error" for bytes that do not decompress, msgpack that is not
// valid, or a value nested deeper than 512 levels.
nlohmann::json payload_to_json(const v1::Payload& payload);
nlohmann::json payloads_to_json(const v1::Payloads& payloads);

// `text` parsed; INVALID_ARGUMENT naming `what` when it is not JSON or nests
// deeper than 512 levels (deeper values would overflow the stack of the
// recursive code that prints and frees them).
Result<nlohmann::json> parse_json(const std::string& text, const std::string& what);
// A JSON value as one uncompressed msgpack payload.
v1::Payload payload_from_value(const nlohmann::json& value);
// parse_json, then payload_from_value.
Result<v1::Payload> payload_from_json(const std::string& text, const std::string& what);

// The 32 raw bytes of a SHA-256 as 64 lower-case hex digits (any bytes in,
// two digits each).
std::string hex_digest(const std::string& bytes);

}  // namespace reprise::history
