// Payloads as JSON for the command line: JSON values in (each becomes one
// msgpack payload, integers exact), JSON out (msgpack decoded, compression
// undone, claim-check references shown as references).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "reprise/v1/common.pb.h"

namespace reprise::cli {

// Throws reprise::Error naming `what` when `text` is not JSON, or nests
// deeper than 512 levels.
v1::Payload payload_from_json(const std::string& text, const std::string& what);

// The payload as a JSON value: its decoded msgpack, null for a void result,
// {"$ref": "sha256:…", "size": N} for a claim-check reference, and
// {"$encoding": …, "$bytes": N} for an encoding the tool cannot read, and
// the same with "$error" for msgpack that is not valid or nests deeper than
// 512 levels.
nlohmann::json payload_to_json(const v1::Payload& payload);
nlohmann::json payloads_to_json(const v1::Payloads& payloads);

}  // namespace reprise::cli
