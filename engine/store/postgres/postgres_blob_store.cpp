#include "engine/store/postgres/postgres_blob_store.hpp"

#include <vector>

namespace reprise::engine {

using history::Sha256;
using history::Sha256Digest;

namespace {

// A blob of another namespace is answered as one that is not there.
constexpr const char* kPgBlobInNamespace =
    "SELECT blobs.blob_id, blobs.size FROM blobs JOIN blob_namespaces ON blob_namespaces.blob_id = blobs.blob_id "
    "AND blob_namespaces.namespace = $2 WHERE blobs.sha256 = $1 AND blobs.complete";

}  // namespace

class PgBlobWriter final : public BlobWriter {
 public:
  PgBlobWriter(PgBlobStore& store, std::string namespace_id) : store_(store), namespace_(std::move(namespace_id)) {}

  ~PgBlobWriter() override {
    if (blob_id_ == 0 || finished_) return;
    // Best effort: a leftover upload is also collected as abandoned later.
    (void)store_.pool_.transaction([this](PgConnection& db) {
      return db.query("DELETE FROM blobs WHERE blob_id = $1 AND NOT complete", PgParams().add(blob_id_)).status();
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
      if (buffer_.size() < chunk) continue;
      full_chunks_.push_back(std::move(buffer_));
      buffer_.clear();
      if (static_cast<int64_t>(full_chunks_.size() * chunk) >= store_.options_.write_batch_bytes) {
        int64_t blob_id = blob_id_, seq = next_seq_;
        REPRISE_RETURN_IF_ERROR(
            store_.pool_.transaction([&](PgConnection& db) { return write_chunks(db, blob_id, seq); }));
        written(blob_id, seq);
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
    const std::string hash(history::as_bytes(info.sha256));
    const int64_t now = to_unix_nanos(store_.clock_.now());
    // Another upload of the same bytes may publish between our look and our
    // publication (a unique violation): the second try finds it stored.
    Status s;
    for (int attempt = 0; attempt < 2; ++attempt) {
      int64_t blob_id = blob_id_, seq = next_seq_;
      s = store_.pool_.transaction([&](PgConnection& db) -> Status {
        info.deduplicated = false;
        REPRISE_RETURN_IF_ERROR(write_chunks(db, blob_id, seq));
        Result<PgResult> stored = db.query(
            "UPDATE blobs SET touched_at = greatest(touched_at, $2) WHERE sha256 = $1 AND complete RETURNING blob_id",
            PgParams().add_bytes(hash).add(now));
        if (!stored) return stored.status();
        int64_t readable = blob_id;
        if (stored->rows() > 0) {
          info.deduplicated = true;
          readable = stored->get_int(0, 0);
          Result<PgResult> drop = db.query("DELETE FROM blobs WHERE blob_id = $1", PgParams().add(blob_id));
          if (!drop) return drop.status();
        } else {
          Result<PgResult> publish =
              db.query("UPDATE blobs SET sha256 = $2, size = $3, complete = true, touched_at = $4 WHERE blob_id = $1",
                       PgParams().add(blob_id).add_bytes(hash).add(size_).add(now));
          if (!publish) return publish.status();
          if (publish->affected() == 0) return BlobStore::upload_abandoned();
        }
        return db
            .query("INSERT INTO blob_namespaces (blob_id, namespace) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                   PgParams().add(readable).add_text(namespace_))
            .status();
      });
      if (s.is_ok()) {
        written(blob_id, seq);
        return info;
      }
      if (s.code() != StatusCode::kAlreadyExists) break;
    }
    finished_ = false;  // let the destructor drop the upload
    return s;
  }

 private:
  // Writes the full chunks waiting, creating the upload row first when
  // `blob_id` is 0; `blob_id` and `seq` move on as it writes.
  Status write_chunks(PgConnection& db, int64_t& blob_id, int64_t& seq) {
    const int64_t now = to_unix_nanos(store_.clock_.now());
    if (blob_id == 0) {
      Result<PgResult> create = db.query(
          "INSERT INTO blobs (sha256, size, complete, touched_at) VALUES (NULL, 0, false, $1) RETURNING blob_id",
          PgParams().add(now));
      if (!create) return create.status();
      blob_id = create->get_int(0, 0);
    } else {
      // Keeps a long upload from looking abandoned to garbage collection.
      Result<PgResult> touch =
          db.query("UPDATE blobs SET touched_at = $2 WHERE blob_id = $1", PgParams().add(blob_id).add(now));
      if (!touch) return touch.status();
      if (touch->affected() == 0) return BlobStore::upload_abandoned();
    }
    for (const std::string& chunk : full_chunks_) {
      Result<PgResult> put = db.query("INSERT INTO blob_chunks (blob_id, seq, data) VALUES ($1, $2, $3)",
                                      PgParams().add(blob_id).add(seq++).add_bytes(chunk));
      if (!put) return put.status();
    }
    return Status::ok();
  }
  // The chunks write_chunks() wrote are committed.
  void written(int64_t blob_id, int64_t seq) {
    blob_id_ = blob_id;
    next_seq_ = seq;
    full_chunks_.clear();
  }

  PgBlobStore& store_;
  const std::string namespace_;
  Sha256 hash_;
  std::string buffer_;                    // the chunk being filled
  std::vector<std::string> full_chunks_;  // not written yet
  int64_t blob_id_ = 0;
  int64_t next_seq_ = 0;
  int64_t size_ = 0;
  bool finished_ = false;
};

class PgBlobReader final : public BlobReader {
 public:
  PgBlobReader(PgPool& pool, int64_t blob_id, int64_t size, Sha256Digest sha256)
      : pool_(pool), blob_id_(blob_id), size_(size), sha256_(sha256) {}

  int64_t size() const override { return size_; }

  Result<std::string> next_chunk() override {
    if (read_ >= size_) return std::string();
    Result<PgResult> r = pool_.read([&](PgConnection& db) {
      return db.query("SELECT data FROM blob_chunks WHERE blob_id = $1 AND seq = $2",
                      PgParams().add(blob_id_).add(seq_));
    });
    if (!r) return r.status();
    if (r->rows() == 0) {
      return Status::not_found("blob " + history::to_hex(sha256_) + " lost chunk " + std::to_string(seq_) +
                               " while being read (deleted?)");
    }
    std::string chunk = r->get_bytes(0, 0);
    ++seq_;
    read_ += static_cast<int64_t>(chunk.size());
    if (chunk.empty() || read_ > size_) {
      return Status::data_loss("blob " + history::to_hex(sha256_) + " chunks do not add up to its size");
    }
    return chunk;
  }

 private:
  PgPool& pool_;
  int64_t blob_id_;
  int64_t size_;
  Sha256Digest sha256_;
  int64_t seq_ = 0;
  int64_t read_ = 0;
};

PgBlobStore::PgBlobStore(PgPool& pool, const Clock& clock, BlobStoreOptions options)
    : pool_(pool), clock_(clock), options_(options) {}

Result<std::unique_ptr<BlobWriter>> PgBlobStore::begin_put(const std::string& namespace_id) {
  return std::unique_ptr<BlobWriter>(new PgBlobWriter(*this, namespace_id));
}

Result<std::unique_ptr<BlobReader>> PgBlobStore::open(const Sha256Digest& sha256, const std::string& namespace_id) {
  Result<PgResult> r = pool_.read([&](PgConnection& db) {
    return db.query(kPgBlobInNamespace, PgParams().add_bytes(history::as_bytes(sha256)).add_text(namespace_id));
  });
  if (!r) return r.status();
  if (r->rows() == 0) return BlobStore::not_in_namespace(sha256, namespace_id);
  return std::unique_ptr<BlobReader>(new PgBlobReader(pool_, r->get_int(0, 0), r->get_int(0, 1), sha256));
}

Result<BlobInfo> PgBlobStore::stat(const Sha256Digest& sha256, const std::string& namespace_id) {
  Result<PgResult> r = pool_.read([&](PgConnection& db) {
    return db.query(kPgBlobInNamespace, PgParams().add_bytes(history::as_bytes(sha256)).add_text(namespace_id));
  });
  if (!r) return r.status();
  if (r->rows() == 0) return BlobStore::not_in_namespace(sha256, namespace_id);
  return BlobInfo{sha256, r->get_int(0, 1), false};
}

Result<BlobTotals> PgBlobStore::totals() {
  Result<PgResult> r = pool_.read([](PgConnection& db) {
    return db.query("SELECT count(*), coalesce(sum(size), 0)::bigint FROM blobs WHERE complete");
  });
  if (!r) return r.status();
  return BlobTotals{r->get_int(0, 0), r->get_int(0, 1)};
}

Result<GcStats> PgBlobStore::collect_garbage(std::chrono::nanoseconds grace, const std::function<bool()>& stop) {
  const int64_t cutoff = to_unix_nanos(clock_.now() - grace);
  // Unreferenced blobs, then abandoned uploads (their chunks go with them,
  // ON DELETE CASCADE), gc_batch per transaction, walking blob ids upwards.
  static constexpr const char* kUnreferenced =
      "DELETE FROM blobs WHERE blob_id IN (SELECT blob_id FROM blobs WHERE blob_id > $2 AND complete "
      "AND touched_at < $1 AND NOT EXISTS (SELECT 1 FROM blob_refs WHERE blob_refs.sha256 = blobs.sha256) "
      "ORDER BY blob_id LIMIT $3) AND touched_at < $1 RETURNING blob_id, size";
  static constexpr const char* kAbandoned =
      "DELETE FROM blobs WHERE blob_id IN (SELECT blob_id FROM blobs WHERE blob_id > $2 AND NOT complete "
      "AND touched_at < $1 ORDER BY blob_id LIMIT $3) AND touched_at < $1 RETURNING blob_id, size";
  GcStats stats;
  for (const char* sql : {kUnreferenced, kAbandoned}) {
    int64_t after = 0;
    while (true) {
      if (stop && stop()) return stats;
      int64_t deleted = 0, bytes = 0, last = after;
      Status s = pool_.transaction([&](PgConnection& db) -> Status {
        Result<PgResult> r = db.query(sql, PgParams().add(cutoff).add(after).add(options_.gc_batch));
        if (!r) return r.status();
        for (int i = 0; i < r->rows(); ++i) {
          last = std::max(last, r->get_int(i, 0));
          bytes += r->get_int(i, 1);
        }
        deleted = r->rows();
        return Status::ok();
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
