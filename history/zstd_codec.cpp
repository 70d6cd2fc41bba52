#include "history/zstd_codec.hpp"

#include <zstd.h>

#include <new>

namespace reprise::history {

ZstdCodec::ZstdCodec(ZstdOptions options) : options_(options), cctx_(ZSTD_createCCtx()), dctx_(ZSTD_createDCtx()) {
  if (cctx_ == nullptr || dctx_ == nullptr) throw std::bad_alloc();
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, options_.level);
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_windowLog, options_.window_log);
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_contentSizeFlag, 1);
  ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 1);
  ZSTD_DCtx_setParameter(dctx_, ZSTD_d_windowLogMax, options_.window_log);
}

ZstdCodec::~ZstdCodec() {
  ZSTD_freeCCtx(cctx_);
  ZSTD_freeDCtx(dctx_);
}

Status ZstdCodec::compress(std::string_view input, std::string& out) {
  const size_t start = out.size();
  out.resize(start + ZSTD_compressBound(input.size()));
  const size_t n = ZSTD_compress2(cctx_, out.data() + start, out.size() - start, input.data(), input.size());
  if (ZSTD_isError(n)) {
    out.resize(start);
    return Status::internal(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
  }
  out.resize(start + n);
  return Status::ok();
}

Result<std::string> ZstdCodec::decompress(std::string_view frame) {
  const unsigned long long size = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (size == ZSTD_CONTENTSIZE_ERROR) return Status::data_loss("not a zstd frame");
  if (size == ZSTD_CONTENTSIZE_UNKNOWN) return Status::data_loss("zstd frame does not record its size");
  // No zstd frame expands more than this: a block decodes to at most 128 KiB
  // and takes at least 4 bytes (an RLE block). A frame that claims more is
  // forged or damaged, and is refused before the claim is allocated.
  constexpr unsigned long long kMaxExpansion = (128 << 10) / 4;
  if (size / kMaxExpansion > frame.size()) {
    return Status::data_loss("zstd frame of " + std::to_string(frame.size()) + " bytes claims to decode to " +
                             std::to_string(size) + " bytes, more than a frame that size can hold");
  }
  if (size > options_.max_decoded_bytes) {
    return Status::resource_exhausted("zstd frame decodes to " + std::to_string(size) + " bytes, over the limit of " +
                                      std::to_string(options_.max_decoded_bytes));
  }
  std::string out(size, '\0');
  const size_t n = ZSTD_decompressDCtx(dctx_, out.data(), out.size(), frame.data(), frame.size());
  if (ZSTD_isError(n)) {
    ZSTD_DCtx_reset(dctx_, ZSTD_reset_session_only);
    return Status::data_loss(std::string("corrupt zstd frame: ") + ZSTD_getErrorName(n));
  }
  if (n != size) return Status::data_loss("zstd frame is shorter than it claims");
  return out;
}

}  // namespace reprise::history
