// BlobStore: content-addressed storage for claim-check payloads.
//
// Blobs are named by the SHA-256 of their bytes, so storing the same bytes
// twice keeps one copy. Writing and reading both stream in chunks: a 100 MB
// blob never has to be in memory at once. A blob lives while an execution
// references it (BlobReference, written in the same transition as the history
// that mentions it); collect_garbage() removes blobs that nothing references
// and that are older than a grace period, which covers the window between
// uploading a blob and committing the transition that references it.
//
// Blobs belong to namespaces: a blob can be read (open, stat, get) only in a
// namespace it was uploaded in. The same bytes uploaded in two namespaces
// are stored once and readable from both.
//
// Thread safety: BlobStore methods may be called from any thread. A
// BlobWriter or BlobReader belongs to one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "history/sha256.hpp"
#include "history/status.hpp"

namespace reprise::engine {

struct BlobInfo {
  history::Sha256Digest sha256{};
  int64_t size = 0;
  bool deduplicated = false;  // the bytes were already stored
};

class BlobWriter {
 public:
  virtual ~BlobWriter() = default;  // an unfinished upload is discarded
  virtual Status write(std::string_view bytes) = 0;
  // Publishes the blob under its hash; the writer is done afterwards.
  virtual Result<BlobInfo> finish() = 0;
};

class BlobReader {
 public:
  virtual ~BlobReader() = default;
  virtual int64_t size() const = 0;
  // The next chunk; empty at the end.
  virtual Result<std::string> next_chunk() = 0;
};

// The complete blobs stored now (the metrics' scrape).
struct BlobTotals {
  int64_t blobs = 0;
  int64_t bytes = 0;
};

struct GcStats {
  int64_t blobs_deleted = 0;
  int64_t bytes_freed = 0;
  int64_t uploads_abandoned = 0;  // unfinished uploads removed
};

class BlobStore {
 public:
  virtual ~BlobStore() = default;

  // An upload into `namespace_id`.
  virtual Result<std::unique_ptr<BlobWriter>> begin_put(const std::string& namespace_id) = 0;
  // NOT_FOUND when the blob is absent or was never uploaded in `namespace_id`.
  virtual Result<std::unique_ptr<BlobReader>> open(const history::Sha256Digest& sha256,
                                                   const std::string& namespace_id) = 0;
  virtual Result<BlobInfo> stat(const history::Sha256Digest& sha256, const std::string& namespace_id) = 0;
  // Removes what nothing references, a batch per transaction. `stop` is
  // asked between batches: once it answers true the collection ends early,
  // with the stats of the batches done (a shutdown must not wait for a whole
  // collection of a large store).
  virtual Result<GcStats> collect_garbage(std::chrono::nanoseconds grace, const std::function<bool()>& stop = {}) = 0;
  // One read of the whole blob table: for a scrape every few seconds, not
  // for a request path. UNIMPLEMENTED where the store keeps no such count.
  virtual Result<BlobTotals> totals() { return Status(StatusCode::kUnimplemented, "no blob totals"); }

  // Whole-value conveniences over the streaming calls.
  Result<BlobInfo> put(std::string_view bytes, const std::string& namespace_id);
  // NOT_FOUND as open(); RESOURCE_EXHAUSTED if larger than max_bytes.
  Result<std::string> get(const history::Sha256Digest& sha256, const std::string& namespace_id, int64_t max_bytes);

  // The errors every store's blobs give, in the same words: an upload that
  // garbage collection took as abandoned, and a blob absent from a namespace.
  static Status upload_abandoned();
  static Status not_in_namespace(const history::Sha256Digest& sha256, const std::string& namespace_id);
};

}  // namespace reprise::engine
