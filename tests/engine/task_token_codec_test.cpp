// TaskTokenCodec and the database's task token keys: what a token carries,
// what is refused, and how rotation keeps the tokens of running tasks.
#include "engine/execution/task_token_codec.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <atomic>
#include <thread>

#include "../store/store_test_util.hpp"
#include "engine/store/sqlite_store.hpp"

namespace reprise::engine {
namespace {

using testing::TempDir;

internal::TaskToken activity_token() {
  internal::TaskToken t;
  t.set_namespace_("default");
  t.set_workflow_id("wf");
  t.set_run_id("run-1");
  t.set_scheduled_event_id(5);
  t.set_attempt(2);
  t.set_activity(true);
  return t;
}

TEST(TaskTokenCodec, DecodesWhatItEncodes) {
  const auto codec = TaskTokenCodec::ephemeral();
  auto decoded = codec->decode(codec->encode(activity_token()));
  ASSERT_TRUE(decoded.is_ok()) << decoded.status().to_string();
  EXPECT_EQ(decoded->SerializeAsString(), activity_token().SerializeAsString());
}

TEST(TaskTokenCodec, EveryAlteredByteIsRefused) {
  const auto codec = TaskTokenCodec::ephemeral();
  const std::string token = codec->encode(activity_token());
  for (size_t i = 0; i < token.size(); ++i) {
    std::string altered = token;
    altered[i] ^= 0x20;
    auto decoded = codec->decode(altered);
    ASSERT_FALSE(decoded.is_ok()) << "byte " << i;
    EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument) << "byte " << i;
  }
  EXPECT_FALSE(codec->decode(token.substr(0, token.size() - 1)).is_ok());
  EXPECT_FALSE(codec->decode(token + "x").is_ok());
}

TEST(TaskTokenCodec, ATokenBuiltFromIdsOrSignedElsewhereIsRefused) {
  const auto codec = TaskTokenCodec::ephemeral();
  auto unsigned_token = codec->decode(activity_token().SerializeAsString());
  EXPECT_EQ(unsigned_token.status().code(), StatusCode::kInvalidArgument);
  // Same key id, another secret: another server's token.
  auto other = codec->decode(TaskTokenCodec::ephemeral()->encode(activity_token()));
  EXPECT_EQ(other.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(other.status().message().find("signature"), std::string::npos) << other.status().message();
}

// The signature is HMAC-SHA256 under the key's secret over everything before
// it, as OpenSSL's one-shot HMAC computes it: the codec keys its HMAC once
// and copies it per token, and tokens signed either way verify alike (those
// handed out before an upgrade too).
TEST(TaskTokenCodec, TheSignatureIsHmacSha256OfTheRestUnderTheKeysSecret) {
  const TaskTokenKey key = new_task_token_key(7);
  const TaskTokenCodec codec({key});
  const std::string token = codec.encode(activity_token());
  ASSERT_GT(token.size(), 32u);
  const std::string signed_part = token.substr(0, token.size() - 32);
  unsigned char mac[32] = {};
  unsigned int size = 0;
  ASSERT_NE(HMAC(EVP_sha256(), key.secret.data(), static_cast<int>(key.secret.size()),
                 reinterpret_cast<const unsigned char*>(signed_part.data()), signed_part.size(), mac, &size),
            nullptr);
  ASSERT_EQ(size, 32u);
  const std::string expected(reinterpret_cast<const char*>(mac), sizeof mac);
  EXPECT_EQ(token.substr(token.size() - 32), expected);
  EXPECT_TRUE(codec.decode(signed_part + expected).is_ok());
}

// One codec serves every RPC thread: tokens encoded and decoded on several
// threads at once all come out right.
TEST(TaskTokenCodec, ManyThreadsEncodeAndDecodeWithOneCodec) {
  const auto codec = TaskTokenCodec::ephemeral();
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      internal::TaskToken token = activity_token();
      for (int i = 0; i < 2000; ++i) {
        token.set_attempt(t * 10000 + i);
        auto decoded = codec->decode(codec->encode(token));
        if (!decoded.is_ok() || decoded->attempt() != token.attempt()) ++wrong;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(TaskTokenCodec, ASignedTokenMustStillNameATask) {
  const auto codec = TaskTokenCodec::ephemeral();
  internal::TaskToken no_task = activity_token();
  no_task.set_scheduled_event_id(0);
  EXPECT_EQ(codec->decode(codec->encode(no_task)).status().message(), "task_token is malformed");
}

TEST(TaskTokenKeys, KeptInTheDatabaseAndRotatedKeepingThePreviousKey) {
  TempDir dir;
  const std::string path = dir.file("keys.db");
  std::vector<TaskTokenKey> first;
  {
    auto store = SqliteStore::open(path);
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    first = (*store)->task_token_keys();
  }
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].secret.size(), 32u);
  const std::string token = TaskTokenCodec(first).encode(activity_token());
  {
    auto store = SqliteStore::open(path);
    ASSERT_TRUE(store.is_ok());
    const auto again = (*store)->task_token_keys();
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].secret, first[0].secret) << "reopening keeps the key";
  }
  StoreOptions rotate;
  rotate.rotate_task_token_key = true;
  {
    auto store = SqliteStore::open(path, rotate);
    ASSERT_TRUE(store.is_ok());
    const auto keys = (*store)->task_token_keys();
    ASSERT_EQ(keys.size(), 2u);
    EXPECT_NE(keys[0].secret, first[0].secret);
    EXPECT_EQ(keys[1].secret, first[0].secret);
    const TaskTokenCodec codec(keys);
    EXPECT_TRUE(codec.decode(token).is_ok()) << "a token of the previous key still verifies";
    auto fresh = codec.decode(codec.encode(activity_token()));
    EXPECT_TRUE(fresh.is_ok());
  }
  {
    auto store = SqliteStore::open(path, rotate);
    ASSERT_TRUE(store.is_ok());
    const auto keys = (*store)->task_token_keys();
    ASSERT_EQ(keys.size(), 2u) << "only the signing key and the one before it are kept";
    auto old = TaskTokenCodec(keys).decode(token);
    EXPECT_EQ(old.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(old.status().message().find("no longer has"), std::string::npos) << old.status().message();
  }
}

}  // namespace
}  // namespace reprise::engine
