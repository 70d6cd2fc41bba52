// SqliteBlobStore: the default BlobStore, in the store's own SQLite file.
//
// Blobs are split into chunks (one row each), so a blob streams in and out
// without ever being whole in memory, and each chunk is written in a short
// transaction that does not hold up transition commits for long. An upload
// is a row with complete = 0 until finish() publishes it under its SHA-256
// (or, when those bytes are already stored, drops it and touches the
// existing blob). References live in blob_refs, written by transitions.
#pragma once

#include <memory>
#include <mutex>

#include "engine/store/blob_store.hpp"
#include "engine/store/read_pool.hpp"
#include "engine/store/sqlite_db.hpp"
#include "history/clock.hpp"

namespace reprise::engine {

struct BlobStoreOptions {
  int64_t chunk_bytes = 1 << 20;
  int64_t max_blob_bytes = 1ll << 30;  // larger uploads fail with RESOURCE_EXHAUSTED
};

class SqliteBlobStore final : public BlobStore {
 public:
  SqliteBlobStore(std::unique_ptr<SqliteDb> writer, ReadPool& readers, const Clock& clock, BlobStoreOptions options);

  Result<std::unique_ptr<BlobWriter>> begin_put() override;
  Result<std::unique_ptr<BlobReader>> open(const history::Sha256Digest& sha256) override;
  Result<BlobInfo> stat(const history::Sha256Digest& sha256) override;
  Result<GcStats> collect_garbage(std::chrono::nanoseconds grace) override;

 private:
  friend class SqliteBlobWriter;
  friend class SqliteBlobReader;

  // For the writer: runs `fn` inside a write transaction on the blob
  // connection, rolling back if it fails.
  template <typename Fn>
  Status in_transaction(Fn&& fn);

  std::mutex write_mu_;  // guards writer_
  std::unique_ptr<SqliteDb> writer_;
  ReadPool& readers_;
  const Clock& clock_;
  BlobStoreOptions options_;
};

}  // namespace reprise::engine
