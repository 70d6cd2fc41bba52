#include "history/payload_json.hpp"

#include <msgpack.hpp>
#include <optional>
#include <stdexcept>

#include "history/payload.hpp"

namespace reprise::history {

namespace {

// nlohmann-json reads and writes msgpack, compares and prints recursively, so
// a value nested a few hundred thousand levels deep (a few hundred KB of
// input) overflows the stack. Values nested deeper than this are refused.
constexpr int kMaxNesting = 512;

// What keeps msgpack bytes from reaching nlohmann-json, if anything. msgpack-c
// allocates an array's or map's elements when it reads the header, so the
// element counts are limited by the input's length (every element takes at
// least a byte): a 5-byte array32 header claiming 0x2337656e elements made it
// ask for 16 GiB. A longer claim is truncated input, answered here: handed to
// nlohmann-json, the values nested inside the claim (which msgpack-c stopped
// before checking their depth) would overflow its stack first.
std::optional<std::string> msgpack_problem(const std::string& msgpack_bytes) {
  const size_t n = msgpack_bytes.size();
  try {
    (void)msgpack::unpack(msgpack_bytes.data(), n, nullptr, nullptr, msgpack::unpack_limit(n, n, n, n, n, kMaxNesting));
  } catch (const msgpack::depth_size_overflow&) {
    return "nested deeper than " + std::to_string(kMaxNesting) + " levels";
  } catch (const msgpack::size_overflow&) {
    return "not valid msgpack";
  } catch (const std::exception&) {
    // Not valid msgpack: nlohmann-json says so below.
  }
  return std::nullopt;
}

// nlohmann-json's own DOM builder, refusing a value nested deeper than
// kMaxNesting. Not json::parse with a callback that counts the depth: its
// builder, on every closing '}', scans all the elements of the enclosing array
// or object for discarded values (json_sax_dom_callback_parser::end_object,
// nlohmann-json 3.11.2), so `[{},{},…]` took time quadratic in its length: a
// minute for the 1 MiB the web UI admits as a request body.
class NestingLimitedBuilder : public nlohmann::detail::json_sax_dom_parser<nlohmann::json> {
 public:
  explicit NestingLimitedBuilder(nlohmann::json& root) : json_sax_dom_parser(root) {}

  bool start_object(std::size_t elements) {
    enter();
    return json_sax_dom_parser::start_object(elements);
  }
  bool end_object() {
    --depth_;
    return json_sax_dom_parser::end_object();
  }
  bool start_array(std::size_t elements) {
    enter();
    return json_sax_dom_parser::start_array(elements);
  }
  bool end_array() {
    --depth_;
    return json_sax_dom_parser::end_array();
  }

 private:
  void enter() {
    if (++depth_ > kMaxNesting)
      throw std::length_error("nested deeper than " + std::to_string(kMaxNesting) + " levels");
  }

  int depth_ = 0;
};

ZstdCodec& codec() {
  thread_local ZstdCodec zstd;
  return zstd;
}

}  // namespace

std::string hex_digest(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

nlohmann::json payload_to_json(const v1::Payload& payload) {
  if (is_claim_check(payload)) {
    return {{"$ref", "sha256:" + hex_digest(payload.external().sha256())}, {"size", payload.external().size()}};
  }
  const std::string encoding(payload_encoding(payload));
  if (encoding == kEncodingNull) return nullptr;
  if (encoding != kEncodingMsgpack) return {{"$encoding", encoding}, {"$bytes", payload.data().size()}};
  Result<std::string> bytes = uncompressed_data(payload, codec());
  if (!bytes) {
    return {{"$encoding", encoding},
            {"$bytes", payload.data().size()},
            {"$error", "cannot be decompressed: " + bytes.status().message()}};
  }
  if (const std::optional<std::string> problem = msgpack_problem(*bytes)) {
    return {{"$encoding", encoding}, {"$bytes", bytes->size()}, {"$error", *problem}};
  }
  try {
    return nlohmann::json::from_msgpack(*bytes);
  } catch (const nlohmann::json::exception&) {
    return {{"$encoding", encoding}, {"$bytes", bytes->size()}, {"$error", "not valid msgpack"}};
  }
}

Result<nlohmann::json> parse_json(const std::string& text, const std::string& what) {
  nlohmann::json value;
  NestingLimitedBuilder builder(value);
  try {
    nlohmann::json::sax_parse(text, &builder);
  } catch (const std::length_error& e) {
    return Status::invalid_argument(what + " is " + e.what());
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
    return Status::invalid_argument(what + " is not valid JSON (" + text + "): " + e.what());
  }
  return value;
}

v1::Payload payload_from_value(const nlohmann::json& value) {
  const std::vector<std::uint8_t> bytes = nlohmann::json::to_msgpack(value);
  return make_payload(kEncodingMsgpack, std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

Result<v1::Payload> payload_from_json(const std::string& text, const std::string& what) {
  Result<nlohmann::json> value = parse_json(text, what);
  if (!value) return value.status();
  return payload_from_value(*value);
}

nlohmann::json payloads_to_json(const v1::Payloads& payloads) {
  nlohmann::json out = nlohmann::json::array();
  for (const v1::Payload& p : payloads.payloads()) out.push_back(payload_to_json(p));
  return out;
}

}  // namespace reprise::history
