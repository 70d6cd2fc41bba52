// SqliteBlobStore: the default BlobStore, in the store's own SQLite file.
//
// Blobs are split into chunks (one row each), so a blob streams in and out
// without ever being whole in memory. Every write goes through the store's
// TransitionWriter (submit_job), so it never competes with transition
// commits for SQLite's write lock and shares their fsync: an upload's chunks
// go a few MiB at a time (write_batch_bytes), and finish() writes the last
// ones and publishes the blob in the same transaction, so a blob of up to
// that size costs one commit. An upload is a row with complete = 0 until
// finish() publishes it under its SHA-256 (or, when those bytes are already
// stored, drops it and touches the existing blob) and records its namespace
// in blob_namespaces, in the same transaction. References live in
// blob_refs, written by transitions. Garbage collection deletes gc_batch
// blobs per transaction, so the writer's batches go on in between.
//
// Writes wait for the writer's commit: never call them on the writer thread.
#pragma once

#include <memory>

#include "engine/store/blob_store.hpp"
#include "engine/store/read_pool.hpp"
#include "engine/store/sqlite_db.hpp"
#include "engine/store/transition_writer.hpp"
#include "reprise/clock.hpp"

namespace reprise::engine {

struct BlobStoreOptions {
  int64_t chunk_bytes = 1 << 20;
  int64_t write_batch_bytes = 4 << 20;  // an upload's chunks written per transaction
  int gc_batch = 500;                   // blobs deleted per transaction by collect_garbage()
  int64_t max_blob_bytes = 1ll << 30;   // larger uploads fail with RESOURCE_EXHAUSTED
};

class SqliteBlobStore final : public BlobStore {
 public:
  SqliteBlobStore(TransitionWriter& writer, ReadPool& readers, const Clock& clock, BlobStoreOptions options);

  Result<std::unique_ptr<BlobWriter>> begin_put(const std::string& namespace_id) override;
  Result<std::unique_ptr<BlobReader>> open(const history::Sha256Digest& sha256,
                                           const std::string& namespace_id) override;
  Result<BlobInfo> stat(const history::Sha256Digest& sha256, const std::string& namespace_id) override;
  Result<GcStats> collect_garbage(std::chrono::nanoseconds grace, const std::function<bool()>& stop) override;
  Result<BlobTotals> totals() override;

 private:
  friend class SqliteBlobWriter;
  friend class SqliteBlobReader;

  // Runs `job` on the store's writer, in a transaction (savepoint) of its
  // own that is rolled back if it fails, and waits for its commit.
  Status in_transaction(TransitionWriter::Job job);

  TransitionWriter& writer_;
  ReadPool& readers_;
  const Clock& clock_;
  BlobStoreOptions options_;
};

}  // namespace reprise::engine
