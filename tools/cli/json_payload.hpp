// Payloads as JSON for the command line: JSON values in (each becomes one
// msgpack payload, integers exact), JSON out (msgpack decoded, compression
// undone, claim-check references shown as references).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "history/payload_json.hpp"
#include "reprise/v1/common.pb.h"

namespace reprise::cli {

// Throws reprise::Error naming `what` when `text` is not JSON, or nests
// deeper than 512 levels.
v1::Payload payload_from_json(const std::string& text, const std::string& what);

// JSON out: history/payload_json.hpp, shared with the server's web UI.
using history::payload_to_json;
using history::payloads_to_json;

}  // namespace reprise::cli
