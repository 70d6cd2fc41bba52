// zstd for large payloads. One codec per thread: its contexts are reused
// across payloads, and a codec must not be shared between threads.
#include "history/payload.hpp"
#include "reprise/codec.hpp"

namespace reprise::detail {

namespace {

history::ZstdCodec& codec() {
  // Up to the server's blob limit: a payload never decodes larger than that.
  thread_local history::ZstdCodec zstd({.level = 3, .max_decoded_bytes = size_t{1} << 30});
  return zstd;
}

}  // namespace

void compress_if_large(v1::Payload& payload) {
  if (Status s = history::compress_if_large(payload, kCompressThreshold, codec()); !s) {
    throw PayloadError("cannot compress a payload: " + s.message());
  }
}

std::string uncompressed_bytes(const v1::Payload& payload, const std::string& what) {
  Result<std::string> bytes = history::uncompressed_data(payload, codec());
  if (!bytes) throw PayloadError(what + " cannot be decompressed: " + bytes.status().message());
  return std::move(bytes).value();
}

}  // namespace reprise::detail
