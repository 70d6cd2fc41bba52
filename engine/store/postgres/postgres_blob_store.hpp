// PgBlobStore: the BlobStore in the PostgreSQL store's database, in chunks
// (one bytea row each), so a blob streams in and out without ever being
// whole in memory. An upload writes its chunks a few MiB per transaction on a
// pooled connection of its own (PostgreSQL lets writers run side by side, so
// uploads never wait for the transition writer); finish() writes the last
// ones and publishes the blob under its SHA-256 — or, when those bytes are
// already stored, drops the upload and touches the stored blob — and records
// the upload's namespace, in one transaction. Garbage collection deletes
// gc_batch blobs per transaction; a transition that references a blob
// touches it in its own transaction, so a collection racing it spares it.
#pragma once

#include <memory>

#include "engine/store/blob_store.hpp"
#include "engine/store/postgres/pg_pool.hpp"
#include "engine/store/sqlite_blob_store.hpp"
#include "reprise/clock.hpp"

namespace reprise::engine {

class PgBlobStore final : public BlobStore {
 public:
  PgBlobStore(PgPool& pool, const Clock& clock, BlobStoreOptions options);

  Result<std::unique_ptr<BlobWriter>> begin_put(const std::string& namespace_id) override;
  Result<std::unique_ptr<BlobReader>> open(const history::Sha256Digest& sha256,
                                           const std::string& namespace_id) override;
  Result<BlobInfo> stat(const history::Sha256Digest& sha256, const std::string& namespace_id) override;
  Result<GcStats> collect_garbage(std::chrono::nanoseconds grace, const std::function<bool()>& stop) override;
  Result<BlobTotals> totals() override;

 private:
  friend class PgBlobWriter;

  PgPool& pool_;
  const Clock& clock_;
  BlobStoreOptions options_;
};

}  // namespace reprise::engine
