// Payload encoding without a server: compression of large values, variants,
// and the errors for claim-check references read the wrong way.
#include "reprise/codec.hpp"

#include <gtest/gtest.h>

#include <variant>

namespace reprise {
namespace {

TEST(PayloadCodec, LargeValuesAreCompressedAndComeBackWhole) {
  const std::string text(200'000, 'x');
  const v1::Payload p = to_payload(text);
  EXPECT_EQ(p.metadata().at("compression"), "zstd");
  EXPECT_LT(p.data().size(), 1'000u);
  EXPECT_EQ(from_payload<std::string>(p, "text"), text);

  const v1::Payload small = to_payload(std::string(100, 'x'));
  EXPECT_FALSE(small.metadata().contains("compression")) << "below 16 KiB nothing is compressed";
}

TEST(PayloadCodec, VariantsTravelAsTheirAlternative) {
  using Event = std::variant<int64_t, std::string, std::vector<int32_t>>;
  EXPECT_EQ(from_payload<Event>(to_payload(Event{std::string("shipped")}), "e"), Event{std::string("shipped")});
  EXPECT_EQ(from_payload<Event>(to_payload(Event{int64_t{1} << 60}), "e"), Event{int64_t{1} << 60});
  const Event list = std::vector<int32_t>{1, 2};
  EXPECT_EQ(from_payload<Event>(to_payload(list), "e"), list);
  try {
    from_payload<std::variant<int64_t>>(to_payload(Event{std::string("x")}), "the event");
    FAIL() << "index 1 of a one-alternative variant decoded";
  } catch (const PayloadError& e) {
    EXPECT_NE(std::string(e.what()).find("the event does not decode as the expected type"), std::string::npos);
  }
}

TEST(PayloadCodec, ClaimChecksReadTheWrongWayAreNamed) {
  v1::Payload ref = to_payload(std::string("big"));
  ref.clear_data();
  ref.mutable_external()->set_sha256(std::string(32, '\1'));
  ref.mutable_external()->set_size(3);
  try {
    from_payload<std::string>(ref, "the report", PayloadLoader{});
    FAIL();
  } catch (const PayloadError& e) {
    EXPECT_EQ(std::string(e.what()),
              "the report is a claim-check reference and no blob store is connected to fetch it");
  }
  EXPECT_EQ(from_payload<Ref<std::string>>(ref, "r").stored_size(), 3) << "a Ref takes the reference as it is";
  try {
    from_payload<Ref<std::string>>(to_payload(std::string("inline")), "the report");
    FAIL();
  } catch (const PayloadError& e) {
    EXPECT_NE(std::string(e.what()).find("the code expects a Ref"), std::string::npos);
  }
}

}  // namespace
}  // namespace reprise
