// EventBatchCodec: the bytes a batch of history events is stored as.
//
// Format: one format byte, then a serialized v1::History.
//   0x01  the History as is (small batches, where zstd would not pay)
//   0x02  one zstd frame of the History
// Batches at or above `compress_threshold` serialized bytes are compressed.
// Decoding checks that the event ids are consecutive, so a batch that was cut
// or spliced is caught here rather than during replay.
//
// Thread safety: none (it owns a ZstdCodec); one codec per thread.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "history/status.hpp"
#include "history/zstd_codec.hpp"
#include "reprise/v1/history.pb.h"

namespace reprise::history {

namespace v1 = ::reprise::v1;

struct BatchCodecOptions {
  size_t compress_threshold = 1024;
  ZstdOptions zstd;
};

class EventBatchCodec {
 public:
  explicit EventBatchCodec(BatchCodecOptions options = {});

  // Encodes consecutive events (at least one).
  Result<std::string> encode(std::span<const v1::HistoryEvent> events);
  Result<std::string> encode(const v1::History& history);

  // Decodes a batch and appends its events to `out`; on error `out` is left
  // as it was.
  Status decode(std::string_view encoded, v1::History& out);

 private:
  template <typename Events>
  Result<std::string> encode_events(const Events& events);
  Status merge(char format, std::string_view body, v1::History& out);

  BatchCodecOptions options_;
  ZstdCodec zstd_;
  std::string scratch_;
};

}  // namespace reprise::history
