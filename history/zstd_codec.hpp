// ZstdCodec: compression with contexts created once and reused, a bounded
// window (so a decoder never needs more than 2^window_log bytes of history)
// and a cap on decoded size (so a corrupt or hostile frame cannot make us
// allocate gigabytes).
//
// Thread safety: none. Contexts are per instance; give each thread its own
// codec (they are cheap to keep, expensive to create per call).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "history/status.hpp"

struct ZSTD_CCtx_s;
struct ZSTD_DCtx_s;

namespace reprise::history {

struct ZstdOptions {
  int level = 3;
  int window_log = 22;                     // 4 MiB match window, both ways
  size_t max_decoded_bytes = 64ull << 20;  // larger frames are refused
};

class ZstdCodec {
 public:
  explicit ZstdCodec(ZstdOptions options = {});
  ~ZstdCodec();
  ZstdCodec(const ZstdCodec&) = delete;
  ZstdCodec& operator=(const ZstdCodec&) = delete;

  // Appends one zstd frame (with its content size recorded) to `out`.
  Status compress(std::string_view input, std::string& out);
  // Decodes one frame written by compress(); DATA_LOSS if it is corrupt or
  // claims a size no frame of its length can decode to, RESOURCE_EXHAUSTED
  // if it would decode to more than max_decoded_bytes.
  Result<std::string> decompress(std::string_view frame);

  const ZstdOptions& options() const { return options_; }

 private:
  ZstdOptions options_;
  ZSTD_CCtx_s* cctx_;
  ZSTD_DCtx_s* dctx_;
};

}  // namespace reprise::history
