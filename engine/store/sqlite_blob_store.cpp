#include "engine/store/sqlite_blob_store.hpp"

#include <future>
#include <vector>

namespace reprise::engine {

using history::Sha256;
using history::Sha256Digest;

Status SqliteBlobStore::in_transaction(TransitionWriter::Job job) {
  std::promise<Status> committed;
  writer_.submit_job(std::move(job), [&committed](Status s) { committed.set_value(std::move(s)); });
  return committed.get_future().get();
}

class SqliteBlobWriter final : public BlobWriter {
 public:
  SqliteBlobWriter(SqliteBlobStore& store, std::string namespace_id)
      : store_(store), namespace_(std::move(namespace_id)) {}

  ~SqliteBlobWriter() override {
    if (blob_id_ == 0 || finished_) return;
    // Best effort: a leftover upload is also collected as abandoned later.
    (void)store_.in_transaction([this](SqliteDb& db) {
      Result<Statement> s = db.prepare("DELETE FROM blobs WHERE blob_id = ?1 AND complete = 0");
      if (!s) return s.status();
      return s->bind(1, blob_id_).run();
    });
  }

  Status write(std::string_view bytes) override {
    if (finished_) return Status::failed_precondition("blob upload already finished");
    if (size_ + static_cast<int64_t>(bytes.size()) > store_.options_.max_blob_bytes) {
      return Status::resource_exhausted("blob exceeds the limit of " + std::to_string(store_.options_.max_blob_bytes) +
                                        " bytes");
    }
    hash_.update(bytes);
    size_ += static_cast<int64_t>(bytes.size());
    const size_t chunk = static_cast<size_t>(store_.options_.chunk_bytes);
    while (!bytes.empty()) {
      const size_t take = std::min(chunk - buffer_.size(), bytes.size());
      buffer_.append(bytes.substr(0, take));
      bytes.remove_prefix(take);
      if (buffer_.size() == chunk) {
        full_chunks_.push_back(std::move(buffer_));
        buffer_.clear();
        if (static_cast<int64_t>(full_chunks_.size() * chunk) >= store_.options_.write_batch_bytes) {
          int64_t blob_id = 0, seq = 0;
          REPRISE_RETURN_IF_ERROR(store_.in_transaction([&](SqliteDb& db) {
            blob_id = blob_id_;
            seq = next_seq_;
            return write_chunks(db, blob_id, seq);
          }));
          written(blob_id, seq);
        }
      }
    }
    return Status::ok();
  }

  Result<BlobInfo> finish() override {
    if (finished_) return Status::failed_precondition("blob upload already finished");
    if (!buffer_.empty()) full_chunks_.push_back(std::move(buffer_));
    buffer_.clear();
    finished_ = true;
    BlobInfo info;
    info.sha256 = hash_.finish();
    info.size = size_;
    const int64_t now = to_unix_nanos(store_.clock_.now());
    // The last chunks and the publication in one transaction.
    int64_t blob_id = 0, seq = 0;
    Status s = store_.in_transaction([&](SqliteDb& db) -> Status {
      blob_id = blob_id_;
      seq = next_seq_;
      info.deduplicated = false;
      REPRISE_RETURN_IF_ERROR(write_chunks(db, blob_id, seq));
      Result<Statement> touch =
          db.prepare("UPDATE blobs SET touched_at = ?2 WHERE sha256 = ?1 AND complete = 1 RETURNING blob_id");
      if (!touch) return touch.status();
      Result<bool> existing = touch->bind_blob(1, history::as_bytes(info.sha256)).bind(2, now).step();
      if (!existing) return existing.status();
      if (*existing) {
        info.deduplicated = true;
        const int64_t stored_id = touch->column_int(0);
        REPRISE_RETURN_IF_ERROR(touch->run());
        Result<Statement> drop = db.prepare("DELETE FROM blobs WHERE blob_id = ?1");
        if (!drop) return drop.status();
        REPRISE_RETURN_IF_ERROR(drop->bind(1, blob_id).run());
        return grant(db, stored_id);
      }
      Result<Statement> publish =
          db.prepare("UPDATE blobs SET sha256 = ?2, size = ?3, complete = 1, touched_at = ?4 WHERE blob_id = ?1");
      if (!publish) return publish.status();
      REPRISE_RETURN_IF_ERROR(
          publish->bind(1, blob_id).bind_blob(2, history::as_bytes(info.sha256)).bind(3, size_).bind(4, now).run());
      if (db.changes() == 0) return BlobStore::upload_abandoned();
      return grant(db, blob_id);
    });
    if (!s.is_ok()) {
      finished_ = false;  // let the destructor drop the upload
      return s;
    }
    written(blob_id, seq);
    return info;
  }

 private:
  // On the writer thread: writes the full chunks waiting, creating the
  // upload row first when `blob_id` is 0; `blob_id` and `seq` move on as it
  // writes. It changes nothing of the writer's own, so a batch tried again
  // (the disk was full) runs it again from the same place.
  Status write_chunks(SqliteDb& db, int64_t& blob_id, int64_t& seq) {
    const int64_t now = to_unix_nanos(store_.clock_.now());
    if (blob_id == 0) {
      Result<Statement> create = db.prepare(
          "INSERT INTO blobs (sha256, size, complete, touched_at) VALUES (NULL, 0, 0, ?1) "
          "RETURNING blob_id");
      if (!create) return create.status();
      Result<bool> row = create->bind(1, now).step();
      if (!row) return row.status();
      blob_id = create->column_int(0);
      REPRISE_RETURN_IF_ERROR(create->run());
    } else {
      // Keeps a long upload from looking abandoned to garbage collection.
      Result<Statement> touch = db.prepare("UPDATE blobs SET touched_at = ?2 WHERE blob_id = ?1");
      if (!touch) return touch.status();
      REPRISE_RETURN_IF_ERROR(touch->bind(1, blob_id).bind(2, now).run());
      if (db.changes() == 0) return BlobStore::upload_abandoned();
    }
    for (const std::string& chunk : full_chunks_) {
      Result<Statement> put = db.prepare("INSERT INTO blob_chunks (blob_id, seq, data) VALUES (?1, ?2, ?3)");
      if (!put) return put.status();
      REPRISE_RETURN_IF_ERROR(put->bind(1, blob_id).bind(2, seq++).bind_blob(3, chunk).run());
    }
    return Status::ok();
  }
  // The blob may be read from this upload's namespace.
  Status grant(SqliteDb& db, int64_t blob_id) {
    Result<Statement> s = db.prepare("INSERT OR IGNORE INTO blob_namespaces (blob_id, namespace) VALUES (?1, ?2)");
    if (!s) return s.status();
    return s->bind(1, blob_id).bind(2, namespace_).run();
  }
  // The chunks write_chunks() wrote are committed.
  void written(int64_t blob_id, int64_t seq) {
    blob_id_ = blob_id;
    next_seq_ = seq;
    full_chunks_.clear();
  }

  SqliteBlobStore& store_;
  const std::string namespace_;
  Sha256 hash_;
  std::string buffer_;                    // the chunk being filled
  std::vector<std::string> full_chunks_;  // not written yet
  int64_t blob_id_ = 0;
  int64_t next_seq_ = 0;
  int64_t size_ = 0;
  bool finished_ = false;
};

class SqliteBlobReader final : public BlobReader {
 public:
  SqliteBlobReader(ReadPool& readers, int64_t blob_id, int64_t size, Sha256Digest sha256)
      : readers_(readers), blob_id_(blob_id), size_(size), sha256_(sha256) {}

  int64_t size() const override { return size_; }

  Result<std::string> next_chunk() override {
    if (read_ >= size_) return std::string();
    ReadPool::Lease db = readers_.acquire();
    Result<Statement> s = db->prepare("SELECT data FROM blob_chunks WHERE blob_id = ?1 AND seq = ?2");
    if (!s) return s.status();
    Result<bool> row = s->bind(1, blob_id_).bind(2, seq_).step();
    if (!row) return row.status();
    if (!*row) {
      return Status::not_found("blob " + history::to_hex(sha256_) + " lost chunk " + std::to_string(seq_) +
                               " while being read (deleted?)");
    }
    std::string chunk = s->column_blob(0);
    ++seq_;
    read_ += static_cast<int64_t>(chunk.size());
    if (chunk.empty() || read_ > size_) {
      return Status::data_loss("blob " + history::to_hex(sha256_) + " chunks do not add up to its size");
    }
    return chunk;
  }

 private:
  ReadPool& readers_;
  int64_t blob_id_;
  int64_t size_;
  Sha256Digest sha256_;
  int64_t seq_ = 0;
  int64_t read_ = 0;
};

SqliteBlobStore::SqliteBlobStore(TransitionWriter& writer, ReadPool& readers, const Clock& clock,
                                 BlobStoreOptions options)
    : writer_(writer), readers_(readers), clock_(clock), options_(options) {}

Result<std::unique_ptr<BlobWriter>> SqliteBlobStore::begin_put(const std::string& namespace_id) {
  return std::unique_ptr<BlobWriter>(new SqliteBlobWriter(*this, namespace_id));
}

namespace {

// A blob of another namespace is answered as one that is not there.
constexpr const char* kSqliteBlobInNamespace =
    "SELECT blobs.blob_id, blobs.size FROM blobs JOIN blob_namespaces ON blob_namespaces.blob_id = blobs.blob_id "
    "AND blob_namespaces.namespace = ?2 WHERE blobs.sha256 = ?1 AND blobs.complete = 1";

}  // namespace

Result<std::unique_ptr<BlobReader>> SqliteBlobStore::open(const Sha256Digest& sha256, const std::string& namespace_id) {
  ReadPool::Lease db = readers_.acquire();
  Result<Statement> s = db->prepare(kSqliteBlobInNamespace);
  if (!s) return s.status();
  Result<bool> row = s->bind_blob(1, history::as_bytes(sha256)).bind(2, namespace_id).step();
  if (!row) return row.status();
  if (!*row) return BlobStore::not_in_namespace(sha256, namespace_id);
  return std::unique_ptr<BlobReader>(new SqliteBlobReader(readers_, s->column_int(0), s->column_int(1), sha256));
}

Result<BlobInfo> SqliteBlobStore::stat(const Sha256Digest& sha256, const std::string& namespace_id) {
  ReadPool::Lease db = readers_.acquire();
  Result<Statement> s = db->prepare(kSqliteBlobInNamespace);
  if (!s) return s.status();
  Result<bool> row = s->bind_blob(1, history::as_bytes(sha256)).bind(2, namespace_id).step();
  if (!row) return row.status();
  if (!*row) return BlobStore::not_in_namespace(sha256, namespace_id);
  return BlobInfo{sha256, s->column_int(1), false};
}

Result<BlobTotals> SqliteBlobStore::totals() {
  ReadPool::Lease db = readers_.acquire();
  Result<Statement> s = db->prepare("SELECT COUNT(*), COALESCE(SUM(size), 0) FROM blobs WHERE complete = 1");
  if (!s) return s.status();
  Result<bool> row = s->step();
  if (!row) return row.status();
  return BlobTotals{s->column_int(0), s->column_int(1)};
}

Result<GcStats> SqliteBlobStore::collect_garbage(std::chrono::nanoseconds grace, const std::function<bool()>& stop) {
  const int64_t cutoff = to_unix_nanos(clock_.now() - grace);
  // Unreferenced blobs, then abandoned uploads (their chunks go with them,
  // ON DELETE CASCADE), gc_batch per transaction, walking blob ids upwards.
  static constexpr const char* kUnreferenced =
      "DELETE FROM blobs WHERE blob_id IN (SELECT blob_id FROM blobs WHERE blob_id > ?2 AND complete = 1 "
      "AND touched_at < ?1 AND NOT EXISTS (SELECT 1 FROM blob_refs WHERE blob_refs.sha256 = blobs.sha256) "
      "ORDER BY blob_id LIMIT ?3) RETURNING blob_id, size";
  static constexpr const char* kAbandoned =
      "DELETE FROM blobs WHERE blob_id IN (SELECT blob_id FROM blobs WHERE blob_id > ?2 AND complete = 0 "
      "AND touched_at < ?1 ORDER BY blob_id LIMIT ?3) RETURNING blob_id, size";
  GcStats stats;
  for (const char* sql : {kUnreferenced, kAbandoned}) {
    int64_t after = 0;
    while (true) {
      if (stop && stop()) return stats;
      int64_t deleted = 0, bytes = 0, last = after;
      Status s = in_transaction([&](SqliteDb& db) -> Status {
        deleted = bytes = 0;  // a batch tried again (the disk was full) counts afresh
        last = after;
        Result<Statement> batch = db.prepare(sql);
        if (!batch) return batch.status();
        batch->bind(1, cutoff).bind(2, after).bind(3, options_.gc_batch);
        while (true) {
          Result<bool> row = batch->step();
          if (!row) return row.status();
          if (!*row) return Status::ok();
          last = std::max(last, batch->column_int(0));
          deleted += 1;
          bytes += batch->column_int(1);
        }
      });
      if (!s.is_ok()) return s;
      after = last;
      if (sql == kUnreferenced) {
        stats.blobs_deleted += deleted;
        stats.bytes_freed += bytes;
      } else {
        stats.uploads_abandoned += deleted;
      }
      if (deleted < options_.gc_batch) break;
    }
  }
  return stats;
}

}  // namespace reprise::engine
