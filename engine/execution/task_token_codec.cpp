#include "engine/execution/task_token_codec.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <array>
#include <stdexcept>

namespace reprise::engine {

namespace {

constexpr unsigned char kVersion = 1;
constexpr size_t kHeaderSize = 1 + 4;
constexpr size_t kMacSize = 32;

using Mac = std::array<unsigned char, kMacSize>;

Mac hmac(const std::string& secret, std::string_view bytes) {
  Mac mac{};
  unsigned int size = 0;
  if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), mac.data(), &size) == nullptr ||
      size != kMacSize) {
    throw std::runtime_error("HMAC-SHA256 failed");  // OpenSSL out of memory
  }
  return mac;
}

uint32_t read_key_id(std::string_view bytes) {
  uint32_t id = 0;
  for (size_t i = 1; i < kHeaderSize; ++i) id = id << 8 | static_cast<unsigned char>(bytes[i]);
  return id;
}

}  // namespace

TaskTokenCodec::TaskTokenCodec(std::vector<TaskTokenKey> keys) : keys_(std::move(keys)) {
  if (keys_.empty()) throw std::invalid_argument("TaskTokenCodec needs a key");
  for (const TaskTokenKey& key : keys_) {
    if (key.secret.size() < 16) throw std::invalid_argument("a task token key is shorter than 16 bytes");
  }
}

std::shared_ptr<const TaskTokenCodec> TaskTokenCodec::ephemeral() {
  return std::make_shared<const TaskTokenCodec>(std::vector<TaskTokenKey>{new_task_token_key(1)});
}

std::string TaskTokenCodec::encode(const internal::TaskToken& token) const {
  const TaskTokenKey& key = keys_.front();
  std::string bytes;
  bytes.push_back(static_cast<char>(kVersion));
  for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<char>(key.id >> shift & 0xff));
  token.AppendToString(&bytes);
  const Mac mac = hmac(key.secret, bytes);
  bytes.append(reinterpret_cast<const char*>(mac.data()), mac.size());
  return bytes;
}

Result<internal::TaskToken> TaskTokenCodec::decode(std::string_view bytes) const {
  if (bytes.size() < kHeaderSize + kMacSize || static_cast<unsigned char>(bytes[0]) != kVersion) {
    return Status::invalid_argument("task_token is malformed");
  }
  const uint32_t key_id = read_key_id(bytes);
  const TaskTokenKey* key = nullptr;
  for (const TaskTokenKey& k : keys_) {
    if (k.id == key_id) key = &k;
  }
  if (key == nullptr) {
    return Status::invalid_argument(
        "task_token was signed with a key this server no longer has (rotated out twice since it was issued)");
  }
  const std::string_view signed_part = bytes.substr(0, bytes.size() - kMacSize);
  const Mac mac = hmac(key->secret, signed_part);
  if (CRYPTO_memcmp(mac.data(), bytes.data() + signed_part.size(), kMacSize) != 0) {
    return Status::invalid_argument("task_token is not one this server issued (its signature does not match)");
  }
  const std::string_view body = signed_part.substr(kHeaderSize);
  internal::TaskToken token;
  if (!token.ParseFromArray(body.data(), static_cast<int>(body.size())) || token.workflow_id().empty() ||
      token.run_id().empty() || (token.scheduled_event_id() <= 0 && token.query_id() == 0)) {
    return Status::invalid_argument("task_token is malformed");
  }
  return token;
}

}  // namespace reprise::engine
