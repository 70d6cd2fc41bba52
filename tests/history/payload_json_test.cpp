// history/payload_json.hpp: the JSON people read and write for payloads
// (the CLI's --input and its output, the web UI).
#include "history/payload_json.hpp"

#include <gtest/gtest.h>

#include "history/payload.hpp"

namespace reprise::history {
namespace {

// What the CLI and the web UI show of a payload: JSON integers go in and
// come out exact (no double in between), and a claim-check reference is
// shown as {"$ref": "sha256:<hex>", "size": N}, never fetched.
TEST(PayloadJson, IntegersStayExactAndAReferenceShowsItsHashAndSize) {
  for (const std::string text : {"18446744073709551615", "-9223372036854775808", "9007199254740993"}) {
    auto p = payload_from_json(text, "--input");
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    EXPECT_EQ(payload_encoding(*p), kEncodingMsgpack);
    EXPECT_EQ(payload_to_json(*p).dump(), text);
  }
  auto nested = payload_from_json(R"({"id":"o7","cents":9007199254740993})", "--input");
  ASSERT_TRUE(nested.is_ok());
  EXPECT_EQ(payload_to_json(*nested)["cents"].get<int64_t>(), 9007199254740993);

  v1::Payload ref = make_payload(kEncodingMsgpack, std::string(1000, 'r'));
  make_claim_check(ref);
  EXPECT_EQ(payload_to_json(ref).dump(),
            R"({"$ref":"sha256:)" + to_hex(Sha256::digest(std::string(1000, 'r'))) + R"(","size":1000})");
  EXPECT_EQ(payload_from_json("{oops", "--input").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace reprise::history
