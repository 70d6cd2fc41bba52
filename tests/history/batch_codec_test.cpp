#include "history/batch_codec.hpp"

#include <gtest/gtest.h>

#include "history/event_builder.hpp"

namespace reprise::history {
namespace {

std::vector<v1::HistoryEvent> make_events(int64_t first, int count, size_t payload_bytes) {
  HistoryBuilder b(first, from_unix_nanos(1'700'000'000'000'000'000));
  for (int i = 0; i < count; ++i) {
    auto* a = b.add(&v1::HistoryEvent::mutable_activity_task_scheduled);
    a->set_activity_id("activity-" + std::to_string(i));
    a->mutable_activity_type()->set_name("charge_card");
    a->mutable_input()->add_payloads()->set_data(std::string(payload_bytes, static_cast<char>('a' + i % 26)));
  }
  return b.take();
}

TEST(EventBatchCodec, SmallBatchStaysPlainAndRoundTrips) {
  EventBatchCodec codec;
  const auto events = make_events(1, 2, 10);
  Result<std::string> encoded = codec.encode(events);
  ASSERT_TRUE(encoded.is_ok()) << encoded.status().to_string();
  EXPECT_EQ((*encoded)[0], 0x01);
  v1::History out;
  ASSERT_TRUE(codec.decode(*encoded, out).is_ok());
  ASSERT_EQ(out.events_size(), 2);
  EXPECT_EQ(out.events(1).SerializeAsString(), events[1].SerializeAsString());
}

TEST(EventBatchCodec, LargeBatchIsCompressedAndRoundTrips) {
  EventBatchCodec codec;
  const auto events = make_events(10, 50, 400);
  Result<std::string> encoded = codec.encode(events);
  ASSERT_TRUE(encoded.is_ok());
  EXPECT_EQ((*encoded)[0], 0x02);
  v1::History plain;
  for (const auto& e : events) *plain.add_events() = e;
  EXPECT_LT(encoded->size(), plain.ByteSizeLong() / 4);  // repetitive payloads shrink a lot
  v1::History out;
  ASSERT_TRUE(codec.decode(*encoded, out).is_ok());
  EXPECT_EQ(out.SerializeAsString(), plain.SerializeAsString());
}

TEST(EventBatchCodec, DecodingAppendsAndChecksContinuityAcrossBatches) {
  EventBatchCodec codec;
  v1::History out;
  ASSERT_TRUE(codec.decode(*codec.encode(make_events(1, 3, 5)), out).is_ok());
  ASSERT_TRUE(codec.decode(*codec.encode(make_events(4, 2, 5)), out).is_ok());
  EXPECT_EQ(out.events_size(), 5);
  Status gap = codec.decode(*codec.encode(make_events(7, 1, 5)), out);
  EXPECT_EQ(gap.code(), StatusCode::kDataLoss);
  EXPECT_EQ(gap.message(), "event batch is not consecutive: event 5 is followed by 7");
  EXPECT_EQ(out.events_size(), 5) << "a failed decode leaves the output as it was";
}

TEST(EventBatchCodec, RefusesToEncodeGapsOrNothing) {
  EventBatchCodec codec;
  auto events = make_events(1, 3, 5);
  events[2].set_event_id(9);
  EXPECT_EQ(codec.encode(events).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(codec.encode(std::span<const v1::HistoryEvent>()).status().code(), StatusCode::kInvalidArgument);
}

TEST(EventBatchCodec, CorruptInputIsDataLossNotACrash) {
  EventBatchCodec codec;
  std::string encoded = *codec.encode(make_events(1, 50, 400));
  v1::History out;
  EXPECT_EQ(codec.decode("", out).code(), StatusCode::kDataLoss);
  EXPECT_EQ(codec.decode(std::string("\x07xyz"), out).message(), "unknown event batch format byte 7");
  EXPECT_EQ(codec.decode(encoded.substr(0, encoded.size() / 2), out).code(), StatusCode::kDataLoss);
  std::string flipped = encoded;
  flipped[flipped.size() / 2] ^= 0x5a;
  EXPECT_EQ(codec.decode(flipped, out).code(), StatusCode::kDataLoss);  // zstd checksum catches it
  EXPECT_EQ(codec.decode(std::string("\x01\xff\xff\xff", 4), out).code(), StatusCode::kDataLoss);
  EXPECT_EQ(out.events_size(), 0);
  // The codec is still usable after errors.
  EXPECT_TRUE(codec.decode(encoded, out).is_ok());
}

// A batch is its events: a History field other than `events` in stored bytes
// (never written by encode) is dropped on decode, so the decoded batch is what
// encoding it again gives (the batch_codec fuzz harness found the round trip
// changing: tests/fuzz/corpus/batch_codec/crash-history-field-not-events).
TEST(EventBatchCodec, DecodeDropsHistoryFieldsThatAreNotEvents) {
  EventBatchCodec codec;
  std::string encoded = *codec.encode(make_events(1, 1, 5));
  encoded += std::string("\x10\x07", 2);  // field 2, varint 7: not in History
  v1::History out;
  ASSERT_TRUE(codec.decode(encoded, out).is_ok());
  ASSERT_EQ(out.events_size(), 1);
  v1::History again;
  ASSERT_TRUE(codec.decode(*codec.encode(out), again).is_ok());
  EXPECT_EQ(out.SerializeAsString(), again.SerializeAsString());
}

TEST(ZstdCodec, RefusesFramesLargerThanTheDecodeLimit) {
  ZstdCodec big;
  std::string frame;
  ASSERT_TRUE(big.compress(std::string(1 << 20, 'z'), frame).is_ok());
  EXPECT_LT(frame.size(), 1000u);
  ZstdCodec small(ZstdOptions{.max_decoded_bytes = 64 << 10});
  Result<std::string> r = small.decompress(frame);
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(r.status().message(), "zstd frame decodes to 1048576 bytes, over the limit of 65536");
  EXPECT_EQ(big.decompress(frame)->size(), 1u << 20);
}

// A frame whose header claims far more than its few bytes can decode to
// (its blocks cut off, or the size forged) is refused before that size is
// allocated: a worker decoding a 20-byte payload must not reserve 64 MiB.
TEST(ZstdCodec, RefusesAFrameClaimingMoreThanItsLengthCanHold) {
  ZstdCodec codec;
  std::string frame;
  const size_t claimed = 64ull << 20;  // the decode limit: the claim alone passes it
  ASSERT_TRUE(codec.compress(std::string(claimed, '\0'), frame).is_ok());
  ASSERT_EQ(codec.decompress(frame)->size(), claimed) << "the most compressible input still decodes";
  const std::string header_only = frame.substr(0, 20);
  Result<std::string> r = codec.decompress(header_only);
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(r.status().message(),
            "zstd frame of 20 bytes claims to decode to 67108864 bytes, more than a frame that size can hold");
}

}  // namespace
}  // namespace reprise::history
