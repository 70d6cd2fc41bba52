// Payload decoding as a worker and a client do it (the bytes come from other
// processes, through the server): a v1.Payload message, then compression
// undone and msgpack decoded into the kinds of types user code declares,
// claim-check references read and checked against their blob. Decoding must
// give a value or throw PayloadError naming the problem; anything else
// escaping, or a crash, is a finding.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "engine/claim_check.hpp"
#include "history/payload.hpp"
#include "reprise/codec.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/quiet_protobuf.hpp"

namespace {

namespace v1 = reprise::v1;

struct Order {
  std::string id;
  int64_t cents = 0;
  std::vector<std::string> items;
  MSGPACK_DEFINE_MAP(id, cents, items);
};

template <typename T>
void decode_as(const v1::Payload& payload) {
  try {
    (void)reprise::from_payload<T>(payload, "the input");
  } catch (const reprise::PayloadError& e) {
    FUZZ_CHECK(std::string(e.what()).starts_with("the input"), "an error that does not name the value: %s", e.what());
  }
}

// A claim-check reference resolved against the blob the input itself carries
// (its `data`): only the blob the reference describes is accepted.
void resolve_against_own_data(const v1::Payload& payload) {
  if (!reprise::history::is_claim_check(payload)) return;
  v1::Payload resolved = payload;
  resolved.clear_data();
  const auto status = reprise::history::resolve_claim_check(resolved, payload.data());
  if (!status.is_ok()) return;
  FUZZ_CHECK(static_cast<int64_t>(payload.data().size()) == payload.external().size(), "a blob of the wrong size");
  FUZZ_CHECK(!resolved.has_external() && resolved.data() == payload.data(), "resolving lost the bytes");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  v1::Payload payload;
  if (!payload.ParseFromArray(data, static_cast<int>(size))) return 0;

  FUZZ_CHECK(!reprise::history::summarize(payload).empty(), "an empty summary");
  std::vector<reprise::history::Sha256Digest> refs;
  (void)reprise::engine::collect_claim_checks(payload, refs);
  resolve_against_own_data(payload);

  decode_as<std::string>(payload);
  decode_as<int64_t>(payload);
  decode_as<uint8_t>(payload);
  decode_as<double>(payload);
  decode_as<bool>(payload);
  decode_as<std::vector<std::string>>(payload);
  decode_as<std::map<std::string, int64_t>>(payload);
  decode_as<std::optional<std::vector<int32_t>>>(payload);
  decode_as<std::tuple<std::string, int64_t, std::vector<double>>>(payload);
  decode_as<std::variant<int64_t, std::string, std::vector<std::string>>>(payload);
  decode_as<Order>(payload);
  decode_as<std::vector<Order>>(payload);
  decode_as<reprise::Ref<Order>>(payload);
  return 0;
}
