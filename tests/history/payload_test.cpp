#include "history/payload.hpp"

#include <gtest/gtest.h>

#include <random>

namespace reprise::history {
namespace {

TEST(Sha256, KnownVector) {
  EXPECT_EQ(to_hex(Sha256::digest("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 incremental;
  incremental.update("a");
  incremental.update("bc");
  EXPECT_EQ(incremental.finish(), Sha256::digest("abc"));
}

TEST(Payload, EncodingMetadata) {
  v1::Payload p = make_payload(kEncodingMsgpack, "\x93\x01\x02\x03");
  EXPECT_EQ(payload_encoding(p), kEncodingMsgpack);
  EXPECT_FALSE(is_compressed(p));
  EXPECT_FALSE(is_claim_check(p));
  EXPECT_EQ(summarize(p), "binary/msgpack 4 B");
  EXPECT_EQ(payload_encoding(v1::Payload()), "");
}

TEST(Payload, CompressesOnlyLargeCompressibleData) {
  ZstdCodec zstd;
  v1::Payload small = make_payload(kEncodingJson, std::string(100, 'a'));
  ASSERT_TRUE(compress_if_large(small, 1024, zstd).is_ok());
  EXPECT_FALSE(is_compressed(small));

  std::mt19937 rng(7);
  std::string noise;
  for (int i = 0; i < 4096; ++i) noise += static_cast<char>(rng());
  v1::Payload random = make_payload(kEncodingMsgpack, noise);
  ASSERT_TRUE(compress_if_large(random, 1024, zstd).is_ok());
  EXPECT_FALSE(is_compressed(random)) << "incompressible data stays as it is";

  const std::string text(100'000, 'q');
  v1::Payload big = make_payload(kEncodingJson, text);
  ASSERT_TRUE(compress_if_large(big, 1024, zstd).is_ok());
  EXPECT_TRUE(is_compressed(big));
  EXPECT_LT(big.data().size(), 1000u);
  EXPECT_EQ(*uncompressed_data(big, zstd), text);
  EXPECT_EQ(summarize(big).substr(0, 10), "json/plain");
}

TEST(Payload, ClaimCheckRoundTrip) {
  const std::string bytes(300'000, 'r');
  v1::Payload p = make_payload(kEncodingMsgpack, bytes);
  std::string moved = make_claim_check(p);
  EXPECT_EQ(moved, bytes);
  EXPECT_TRUE(is_claim_check(p));
  EXPECT_TRUE(p.data().empty());
  EXPECT_EQ(p.external().size(), 300'000);
  EXPECT_EQ(p.external().encoding(), kEncodingMsgpack);
  EXPECT_EQ(p.external().sha256(), std::string(as_bytes(Sha256::digest(bytes))));
  EXPECT_EQ(summarize(p).substr(0, 24), "claim-check sha256:" + to_hex(Sha256::digest(bytes)).substr(0, 5));
  ZstdCodec zstd;
  EXPECT_EQ(uncompressed_data(p, zstd).status().code(), StatusCode::kFailedPrecondition);

  v1::Payload wrong = p;
  EXPECT_EQ(resolve_claim_check(wrong, std::string(300'000, 's')).message(),
            "claim-check blob does not match its sha256");
  EXPECT_EQ(resolve_claim_check(wrong, "short").code(), StatusCode::kDataLoss);
  ASSERT_TRUE(resolve_claim_check(p, moved).is_ok());
  EXPECT_FALSE(is_claim_check(p));
  EXPECT_EQ(p.data(), bytes);
}

}  // namespace
}  // namespace reprise::history
