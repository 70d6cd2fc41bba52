// The event batch codec on stored bytes it did not write: a batch read back
// from a damaged or foreign database file, in either format (0x01 plain,
// 0x02 zstd). Decoding must answer an error or a consecutive batch; a batch it
// accepts must survive encoding again, plain and compressed, unchanged.
#include <google/protobuf/util/message_differencer.h>

#include <cstdint>
#include <string_view>

#include "history/batch_codec.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/quiet_protobuf.hpp"

namespace {

using reprise::history::BatchCodecOptions;
using reprise::history::EventBatchCodec;
namespace v1 = reprise::v1;

void check_round_trip(EventBatchCodec& codec, const v1::History& decoded, const char* which) {
  auto encoded = codec.encode(decoded);
  FUZZ_CHECK(encoded.is_ok(), "%s: a decoded batch does not encode again: %s", which,
             encoded.status().to_string().c_str());
  v1::History again;
  const auto status = codec.decode(*encoded, again);
  FUZZ_CHECK(status.is_ok(), "%s: its own encoding does not decode: %s", which, status.to_string().c_str());
  FUZZ_CHECK(google::protobuf::util::MessageDifferencer::Equals(decoded, again), "%s: the round trip changed the batch",
             which);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static EventBatchCodec codec;  // the store's options
  static EventBatchCodec always_zstd([] {
    BatchCodecOptions options;
    options.compress_threshold = 0;
    return options;
  }());

  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  v1::History decoded;
  const auto status = codec.decode(bytes, decoded);
  if (!status.is_ok()) {
    FUZZ_CHECK(decoded.events_size() == 0, "a failed decode left %d events behind", decoded.events_size());
    FUZZ_CHECK(!status.message().empty(), "an error without a message");
    return 0;
  }
  FUZZ_CHECK(decoded.events_size() > 0, "an accepted batch with no events");
  check_round_trip(codec, decoded, "plain");
  check_round_trip(always_zstd, decoded, "zstd");

  // Appending the same batch again breaks continuity (its first id repeats the
  // last), unless it is one event that follows itself: never. The events
  // already there must stay as they were.
  v1::History appended = decoded;
  const auto again = codec.decode(bytes, appended);
  FUZZ_CHECK(!again.is_ok(), "a batch was accepted right after itself");
  FUZZ_CHECK(google::protobuf::util::MessageDifferencer::Equals(decoded, appended),
             "a refused batch changed the events before it");
  return 0;
}
