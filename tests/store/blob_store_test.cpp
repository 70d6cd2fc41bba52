// The blob store of both stores (store_under_test.hpp): chunked uploads,
// deduplication, namespaces, limits and garbage collection behave the same
// on a SQLite file and on PostgreSQL.
#include "engine/store/blob_store.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>

#include "engine/store/postgres/pg_connection.hpp"
#include "engine/store/sqlite_store.hpp"
#include "store_under_test.hpp"

namespace reprise::engine {
namespace {

using history::Sha256;
using testing::key;
using testing::step;
using testing::StoreKind;

class BlobStoreTest : public testing::StoreFixture {
 protected:
  void SetUp() override {
    StoreFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    StoreOptions options;
    options.clock = &clock_;
    options.blobs.chunk_bytes = 64 << 10;
    options.blobs.max_blob_bytes = 8 << 20;
    auto s = testing::open_any_store(db_, std::move(options));
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    store_ = std::move(*s);
  }
  BlobStore& blobs() { return store_->blobs(); }

  // Runs `sql` on the test's database from a connection of its own.
  int64_t blob_test_scalar(const std::string& sql) {
    if (GetParam() == StoreKind::kPostgres) {
      auto db = PgConnection::connect(db_);
      EXPECT_TRUE(db.is_ok()) << db.status().to_string();
      auto r = (*db)->query(sql);
      EXPECT_TRUE(r.is_ok()) << r.status().to_string();
      return r->get_int(0, 0);
    }
    auto db = SqliteDb::open(db_, false, Durability::kFull);
    auto s = (*db)->prepare_uncached(sql);
    EXPECT_TRUE(*s->step());
    return s->column_int(0);
  }
  int64_t count(const char* table) { return blob_test_scalar(std::string("SELECT count(*) FROM ") + table); }

  ManualClock clock_;
  std::unique_ptr<Store> store_;
};

INSTANTIATE_TEST_SUITE_P(BothStores, BlobStoreTest, ::testing::Values(StoreKind::kSqlite, StoreKind::kPostgres),
                         testing::store_kind_name);

std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131) ^ (i >> 9));
  return s;
}

TEST_P(BlobStoreTest, PutAndGetSmallAndEmpty) {
  auto info = blobs().put("hello", "default");
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(info->sha256, Sha256::digest("hello"));
  EXPECT_EQ(info->size, 5);
  EXPECT_FALSE(info->deduplicated);
  EXPECT_EQ(*blobs().get(info->sha256, "default", 100), "hello");

  auto empty = blobs().put("", "default");
  ASSERT_TRUE(empty.is_ok());
  EXPECT_EQ(*blobs().get(empty->sha256, "default", 100), "");
  EXPECT_EQ(blobs().stat(empty->sha256, "default")->size, 0);
}

TEST_P(BlobStoreTest, StreamsLargeBlobsInChunks) {
  const std::string data = pattern(5'000'000);
  auto writer = blobs().begin_put("default");
  ASSERT_TRUE(writer.is_ok());
  for (size_t at = 0; at < data.size(); at += 77'777) {
    ASSERT_TRUE((*writer)->write(std::string_view(data).substr(at, 77'777)).is_ok());
  }
  auto info = (*writer)->finish();
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(info->sha256, Sha256::digest(data));
  EXPECT_EQ(count("blob_chunks"), (5'000'000 + (64 << 10) - 1) / (64 << 10));

  auto reader = blobs().open(info->sha256, "default");
  ASSERT_TRUE(reader.is_ok());
  EXPECT_EQ((*reader)->size(), 5'000'000);
  Sha256 hash;
  size_t largest = 0;
  while (true) {
    auto chunk = (*reader)->next_chunk();
    ASSERT_TRUE(chunk.is_ok());
    if (chunk->empty()) break;
    largest = std::max(largest, chunk->size());
    hash.update(*chunk);
  }
  EXPECT_EQ(hash.finish(), info->sha256);
  EXPECT_EQ(largest, 64u << 10) << "reading never holds more than a chunk";
}

TEST_P(BlobStoreTest, SameBytesAreStoredOnce) {
  const std::string data = pattern(200'000);
  ASSERT_FALSE(blobs().put(data, "default")->deduplicated);
  auto again = blobs().put(data, "default");
  ASSERT_TRUE(again.is_ok());
  EXPECT_TRUE(again->deduplicated);
  EXPECT_EQ(count("blobs"), 1);
  EXPECT_EQ(count("blob_chunks"), 4);
}

TEST_P(BlobStoreTest, GarbageCollectionKeepsReferencedAndRecentBlobs) {
  const auto owner = key("report");
  auto kept = blobs().put(pattern(100'000), "default");
  auto dropped = blobs().put("unreferenced", "default");
  Transition t;
  t.executions.push_back(step(owner, 1));
  t.add_blob_refs.push_back({kept->sha256, owner});
  ASSERT_TRUE(store_->commit(t).is_ok());

  // Within the grace period nothing goes: the referencing transition of a
  // fresh upload may not have committed yet.
  auto early = blobs().collect_garbage(std::chrono::minutes(10));
  EXPECT_EQ(early->blobs_deleted, 0);

  clock_.advance(std::chrono::minutes(11));
  auto late = blobs().collect_garbage(std::chrono::minutes(10));
  EXPECT_EQ(late->blobs_deleted, 1);
  EXPECT_EQ(late->bytes_freed, 12);
  EXPECT_EQ(blobs().stat(dropped->sha256, "default").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(blobs().stat(kept->sha256, "default").is_ok());

  Transition del;
  del.delete_executions.push_back(owner);
  ASSERT_TRUE(store_->commit(del).is_ok());
  EXPECT_EQ(blobs().collect_garbage(std::chrono::minutes(10))->blobs_deleted, 1);
  EXPECT_EQ(count("blob_chunks"), 0);
}

TEST_P(BlobStoreTest, ReuploadRenewsTheGracePeriod) {
  auto first = blobs().put("payload", "default");
  clock_.advance(std::chrono::minutes(30));
  ASSERT_TRUE(blobs().put("payload", "default")->deduplicated);
  EXPECT_EQ(blobs().collect_garbage(std::chrono::minutes(10))->blobs_deleted, 0);
  EXPECT_TRUE(blobs().stat(first->sha256, "default").is_ok());
}

TEST_P(BlobStoreTest, AbandonedUploadsAreCollected) {
  auto writer = blobs().begin_put("default");
  ASSERT_TRUE((*writer)->write(pattern(5'000'000)).is_ok());
  EXPECT_EQ(count("blob_chunks"), 64);  // 4 MiB are written; the rest waits for finish()
  clock_.advance(std::chrono::hours(1));
  auto gc = blobs().collect_garbage(std::chrono::minutes(10));
  EXPECT_EQ(gc->uploads_abandoned, 1);
  EXPECT_EQ(count("blob_chunks"), 0);
  EXPECT_EQ((*writer)->finish().status().code(), StatusCode::kAborted);
}

TEST_P(BlobStoreTest, DroppedWriterLeavesNothing) {
  {
    auto writer = blobs().begin_put("default");
    ASSERT_TRUE((*writer)->write(pattern(100'000)).is_ok());
  }
  EXPECT_EQ(count("blobs"), 0);
  EXPECT_EQ(count("blob_chunks"), 0);
}

TEST_P(BlobStoreTest, LimitsAndMissingBlobs) {
  auto writer = blobs().begin_put("default");
  Status over = (*writer)->write(std::string((8 << 20) + 1, 'x'));
  EXPECT_EQ(over.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(over.message(), "blob exceeds the limit of 8388608 bytes");

  auto info = blobs().put(pattern(1000), "default");
  EXPECT_EQ(blobs().get(info->sha256, "default", 999).status().code(), StatusCode::kResourceExhausted);
  const auto missing = Sha256::digest("missing");
  EXPECT_EQ(blobs().get(missing, "default", 10).status().message(),
            "blob " + history::to_hex(missing) + " is not in the blob store of namespace 'default'");
}

// A blob is read only in a namespace it was uploaded in; the same bytes
// uploaded in a second namespace are stored once and readable there too.
TEST_P(BlobStoreTest, ABlobIsReadOnlyInTheNamespacesItWasUploadedIn) {
  auto info = blobs().put("secret of a", "a");
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(*blobs().get(info->sha256, "a", 100), "secret of a");
  EXPECT_EQ(blobs().stat(info->sha256, "b").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(blobs().open(info->sha256, "b").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(blobs().get(info->sha256, "b", 100).status().message(),
            "blob " + history::to_hex(info->sha256) + " is not in the blob store of namespace 'b'");

  auto again = blobs().put("secret of a", "b");
  ASSERT_TRUE(again.is_ok());
  EXPECT_TRUE(again->deduplicated);
  EXPECT_EQ(*blobs().get(info->sha256, "b", 100), "secret of a");
  EXPECT_EQ(blobs().totals()->blobs, 1);
}

// Blob writes share the store's writer: an upload's chunks go in a few MiB
// at a time, the last ones with the publication, so a 1 MiB upload is one
// commit however small the pieces it arrives in. (PostgreSQL's uploads do
// not go through its writer; they are checked by the tests above.)
TEST(SqliteBlobStore, AnUploadIsABoundedNumberOfCommitsWhateverItsPieces) {
  testing::TempDir dir;
  StoreOptions options;
  options.blobs.chunk_bytes = 64 << 10;
  options.blobs.max_blob_bytes = 8 << 20;
  auto store = SqliteStore::open(dir.file("blobs.db"), options);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  BlobStore& blobs = (*store)->blobs();
  for (const int64_t size : {int64_t{1} << 20, int64_t{6} << 20}) {
    const std::string bytes = pattern(size);
    const int64_t before = (*store)->commits();
    auto writer = blobs.begin_put("default");
    ASSERT_TRUE(writer.is_ok());
    for (size_t at = 0; at < bytes.size(); at += 16 << 10) {
      ASSERT_TRUE((*writer)->write(std::string_view(bytes).substr(at, 16 << 10)).is_ok());
    }
    auto info = (*writer)->finish();
    ASSERT_TRUE(info.is_ok()) << info.status().to_string();
    // 64 KiB chunks, 4 MiB of them per transaction.
    EXPECT_EQ((*store)->commits() - before, size <= (4 << 20) ? 1 : 2) << size << " bytes";
    EXPECT_EQ(*blobs.get(info->sha256, "default", size), bytes);
  }
}

// Collection deletes a batch of blobs per transaction, so transitions
// commit in between instead of waiting for the whole collection.
TEST_P(BlobStoreTest, CollectionDeletesInShortTransactionsThatCommitsGoBetween) {
  constexpr int kBlobs = 20'000;
  if (GetParam() == StoreKind::kPostgres) {
    auto db = PgConnection::connect(db_);
    ASSERT_TRUE(db.is_ok()) << db.status().to_string();
    ASSERT_TRUE((*db)
                    ->exec("INSERT INTO blobs (sha256, size, complete, touched_at) "
                           "SELECT sha256(i::text::bytea), 10, true, 0 FROM generate_series(1, 20000) AS i;"
                           "INSERT INTO blob_chunks (blob_id, seq, data) SELECT blob_id, 0, '\\x00' FROM blobs")
                    .is_ok());
  } else {
    auto db = SqliteDb::open(db_, false, Durability::kNormal);
    ASSERT_TRUE((*db)->exec("BEGIN").is_ok());
    ASSERT_TRUE((*db)
                    ->exec("INSERT INTO blobs (sha256, size, complete, touched_at) "
                           "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) "
                           "SELECT randomblob(32), 10, 1, 0 FROM n")
                    .is_ok());
    ASSERT_TRUE((*db)
                    ->exec("INSERT INTO blob_chunks (blob_id, seq, data) SELECT blob_id, 0, randomblob(10) FROM blobs")
                    .is_ok());
    ASSERT_TRUE((*db)->exec("COMMIT").is_ok());
  }
  auto* sqlite = dynamic_cast<SqliteStore*>(store_.get());
  const int64_t before = sqlite != nullptr ? sqlite->commits() : 0;
  std::atomic<bool> collecting{true};
  auto gc = std::async(std::launch::async, [&] {
    auto stats = blobs().collect_garbage(std::chrono::minutes(10));
    collecting = false;
    return stats;
  });
  int committed_during = 0;
  for (int n = 0; collecting; ++n) {
    Transition t;
    t.executions.push_back(step(key("during-" + std::to_string(n)), 1));
    const bool ok = store_->commit(t).is_ok();
    if (ok && collecting) ++committed_during;
  }
  auto stats = gc.get();
  ASSERT_TRUE(stats.is_ok()) << stats.status().to_string();
  EXPECT_EQ(stats->blobs_deleted, kBlobs);
  EXPECT_EQ(count("blob_chunks"), 0);
  if (sqlite != nullptr) {  // on PostgreSQL collection does not commit through the writer it counts
    EXPECT_GE(sqlite->commits() - before, kBlobs / 500) << "one transaction per batch of 500 blobs";
  }
  EXPECT_GE(committed_during, 5) << "transitions waited for the whole collection";
}

}  // namespace
}  // namespace reprise::engine
