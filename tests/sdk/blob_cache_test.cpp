// The worker's cache of fetched claim-check payloads
// (WorkerOptions::blob_cache_bytes) is bounded by bytes and keeps the
// payloads read most recently: against the engine embedded on a real SQLite
// file, counting the GetPayload calls that reach it.
#include <gtest/gtest.h>

#include <atomic>
#include <random>

#include "../store/store_test_util.hpp"
#include "forwarding_connection.hpp"
#include "history/payload.hpp"
#include "reprise/client.hpp"
#include "reprise/detail/blobs.hpp"

namespace reprise {
namespace {

class CountedFetches : public ForwardingConnection {
 public:
  using ForwardingConnection::ForwardingConnection;
  std::string get_payload(const std::string& sha256) override {
    ++fetches;
    return inner_->get_payload(sha256);
  }
  std::atomic<int> fetches{0};
};

// `size` bytes that do not compress, stored by reference.
v1::Payload stored(detail::Blobs& blobs, size_t size, uint32_t seed) {
  std::mt19937 random(seed);
  std::string bytes(size, '\0');
  for (char& c : bytes) c = static_cast<char>(random());
  v1::Payload p;
  p.set_data(bytes);
  blobs.store(p);
  EXPECT_TRUE(history::is_claim_check(p));
  return p;
}

TEST(BlobCache, FetchedPayloadsAreKeptUpToTheByteBoundLeastRecentlyReadGoingFirst) {
  engine::testing::TempDir dir;
  auto connection = std::make_shared<CountedFetches>(Connection::embedded(dir.file("blobs.db")));
  constexpr size_t kMiB = 1 << 20;
  detail::Blobs blobs(*connection, detail::BlobOptions{.cache_bytes = 3 * kMiB});
  const v1::Payload a = stored(blobs, kMiB + 1000, 1);
  const v1::Payload b = stored(blobs, kMiB + 2000, 2);
  const v1::Payload c = stored(blobs, kMiB + 3000, 3);
  const v1::Payload huge = stored(blobs, 4 * kMiB, 4);

  auto read = [&](const v1::Payload& ref) {
    const int before = connection->fetches;
    v1::Payload resolved = blobs.resolve(ref);
    EXPECT_FALSE(history::is_claim_check(resolved));
    EXPECT_EQ(static_cast<int64_t>(resolved.data().size()), ref.external().size());
    return connection->fetches - before;  // 1: fetched, 0: from the cache
  };
  EXPECT_EQ(read(a), 1);
  EXPECT_EQ(read(a), 0) << "a payload read again comes from the cache";
  EXPECT_EQ(read(b), 1);
  EXPECT_EQ(read(a), 0);  // a is now the most recent, b the least
  EXPECT_EQ(read(c), 1);  // a + b + c exceed 3 MiB: b goes
  EXPECT_EQ(read(a), 0);
  EXPECT_EQ(read(c), 0);
  EXPECT_EQ(read(b), 1) << "the least recently read payload was evicted";
  EXPECT_EQ(read(huge), 1);
  EXPECT_EQ(read(huge), 1) << "a payload larger than the whole cache is never kept";

  detail::Blobs uncached(*connection, detail::BlobOptions{.cache_bytes = 0});
  const int before = connection->fetches;
  uncached.resolve(a);
  uncached.resolve(a);
  EXPECT_EQ(connection->fetches - before, 2) << "a cache of 0 bytes keeps nothing";
}

}  // namespace
}  // namespace reprise
