// The command line's JSON <-> msgpack conversion, both ways it meets outside
// bytes: JSON a user typed (`reprise workflow start --input`), and msgpack
// payloads other programs wrote (`reprise workflow show`, `history`). JSON
// must come back as the same value after a trip through msgpack; any msgpack
// must print as a value or as an "$error" object, never crash.
#include <cstdint>
#include <string>

#include "history/payload.hpp"
#include "reprise/errors.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/quiet_protobuf.hpp"
#include "tools/cli/json_payload.hpp"

namespace {

namespace v1 = reprise::v1;

void json_text(const std::string& text) {
  v1::Payload payload;
  try {
    payload = reprise::cli::payload_from_json(text, "--input");
  } catch (const reprise::Error& e) {
    FUZZ_CHECK(std::string(e.what()).starts_with("--input"), "an error that does not name the value: %s", e.what());
    return;
  }
  const nlohmann::json shown = reprise::cli::payload_to_json(payload);
  const nlohmann::json typed = nlohmann::json::parse(text);
  FUZZ_CHECK(shown == typed, "the value changed on its way through msgpack: %s became %s", typed.dump().c_str(),
             shown.dump().c_str());
}

void msgpack_bytes(const std::string& bytes) {
  v1::Payload payload = reprise::history::make_payload(reprise::history::kEncodingMsgpack, bytes);
  try {
    // As reprise prints it (tools/cli/main.cpp): a msgpack string need not be
    // UTF-8, and such bytes print as U+FFFD.
    (void)reprise::cli::payload_to_json(payload).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const reprise::Error& e) {
    FUZZ_CHECK(false, "an uncompressed payload failed to show: %s", e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  json_text(bytes);
  msgpack_bytes(bytes);
  return 0;
}
