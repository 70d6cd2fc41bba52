// history/payload_json.hpp: the JSON people read and write for payloads
// (the CLI's --input and its output, the web UI).
#include "history/payload_json.hpp"

#include <gtest/gtest.h>

#include <chrono>

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

// 512 levels of nesting are a value; 513 are refused, naming the limit,
// before the recursive code that prints and frees values sees them.
TEST(PayloadJson, AValueNestsAtMost512LevelsDeep) {
  const auto nested = [](int levels) { return std::string(levels, '[') + std::string(levels, ']'); };
  auto deepest = payload_from_json(nested(512), "--input");
  ASSERT_TRUE(deepest.is_ok()) << deepest.status().to_string();
  EXPECT_EQ(payload_to_json(*deepest).dump(), nested(512));

  auto deeper = payload_from_json(nested(513), "--input");
  EXPECT_EQ(deeper.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(deeper.status().message(), "--input is nested deeper than 512 levels");
}

// The web UI parses request bodies of up to 1 MiB with parse_json, and the
// CLI its --input: parsing takes time linear in the text. With nlohmann's
// callback parser (each closing '}' scanned the whole enclosing array) this
// body took about a minute; now it takes milliseconds (the bound leaves room
// for a sanitizer build on a busy machine).
TEST(PayloadJson, AMebibyteOfEmptyObjectsParsesInLinearTime) {
  const size_t objects = (1 << 20) / 3;
  std::string text = "[{}";
  for (size_t i = 1; i < objects; ++i) text += ",{}";
  text += "]";
  const auto start = std::chrono::steady_clock::now();
  Result<nlohmann::json> value = parse_json(text, "the request body");
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(value.is_ok()) << value.status().to_string();
  EXPECT_EQ(value->size(), objects);
  EXPECT_LT(took, std::chrono::seconds(3))
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms for " << text.size() << " bytes";
}

}  // namespace
}  // namespace reprise::history
