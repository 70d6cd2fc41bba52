// reprise.v1 messages as JSON for the web UI's API, made for people: payloads
// decoded (history/payload_json.hpp: msgpack as its value, a claim-check
// reference as {"$ref": "sha256:<hex>", "size": N}), times as RFC 3339 text,
// durations as "1.500s", enums by their short name ("COMPLETED"), bytes as
// hex. Fields left at their default are left out, as protobuf's own JSON
// printer does. Protobuf's JsonPrintOptions cannot decode payloads, hence
// this walk over the message's reflection.
//
// Thread safety: any thread.
#pragma once

#include <google/protobuf/message.h>

#include <nlohmann/json.hpp>

namespace reprise::engine {

nlohmann::json message_to_json(const google::protobuf::Message& message);

}  // namespace reprise::engine
