#include "engine/execution/task_token_codec.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <array>
#include <stdexcept>

namespace reprise::engine {

namespace {

constexpr unsigned char kVersion = 1;
constexpr size_t kHeaderSize = 1 + 4;
constexpr size_t kMacSize = 32;

using Mac = std::array<unsigned char, kMacSize>;

Mac hmac(const EVP_MAC_CTX* keyed, std::string_view bytes) {
  Mac mac{};
  size_t size = 0;
  EVP_MAC_CTX* context = EVP_MAC_CTX_dup(keyed);
  const bool ok = context != nullptr &&
                  EVP_MAC_update(context, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()) == 1 &&
                  EVP_MAC_final(context, mac.data(), &size, mac.size()) == 1 && size == kMacSize;
  EVP_MAC_CTX_free(context);
  if (!ok) throw std::runtime_error("HMAC-SHA256 failed");  // OpenSSL out of memory
  return mac;
}

uint32_t read_key_id(std::string_view bytes) {
  uint32_t id = 0;
  for (size_t i = 1; i < kHeaderSize; ++i) id = id << 8 | static_cast<unsigned char>(bytes[i]);
  return id;
}

}  // namespace

void TaskTokenCodec::FreeMacContext::operator()(EVP_MAC_CTX* context) const { EVP_MAC_CTX_free(context); }

TaskTokenCodec::MacContext TaskTokenCodec::keyed_context(const std::string& secret) {
  std::unique_ptr<EVP_MAC, decltype(&EVP_MAC_free)> hmac_algorithm(EVP_MAC_fetch(nullptr, "HMAC", nullptr),
                                                                   &EVP_MAC_free);
  if (!hmac_algorithm) throw std::runtime_error("OpenSSL has no HMAC");
  MacContext context(EVP_MAC_CTX_new(hmac_algorithm.get()));
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                               OSSL_PARAM_construct_end()};
  if (!context ||
      EVP_MAC_init(context.get(), reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), params) != 1) {
    throw std::runtime_error("HMAC-SHA256 could not be keyed");
  }
  return context;
}

TaskTokenCodec::TaskTokenCodec(std::vector<TaskTokenKey> keys) {
  if (keys.empty()) throw std::invalid_argument("TaskTokenCodec needs a key");
  for (const TaskTokenKey& key : keys) {
    if (key.secret.size() < 16) throw std::invalid_argument("a task token key is shorter than 16 bytes");
    keys_.push_back({key.id, keyed_context(key.secret)});
  }
}

std::shared_ptr<const TaskTokenCodec> TaskTokenCodec::ephemeral() {
  return std::make_shared<const TaskTokenCodec>(std::vector<TaskTokenKey>{new_task_token_key(1)});
}

std::string TaskTokenCodec::encode(const internal::TaskToken& token) const {
  const Key& key = keys_.front();
  std::string bytes;
  bytes.push_back(static_cast<char>(kVersion));
  for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<char>(key.id >> shift & 0xff));
  token.AppendToString(&bytes);
  const Mac mac = hmac(key.keyed.get(), bytes);
  bytes.append(reinterpret_cast<const char*>(mac.data()), mac.size());
  return bytes;
}

Result<internal::TaskToken> TaskTokenCodec::decode(std::string_view bytes) const {
  if (bytes.size() < kHeaderSize + kMacSize || static_cast<unsigned char>(bytes[0]) != kVersion) {
    return Status::invalid_argument("task_token is malformed");
  }
  const uint32_t key_id = read_key_id(bytes);
  const Key* key = nullptr;
  for (const Key& k : keys_) {
    if (k.id == key_id) key = &k;
  }
  if (key == nullptr) {
    return Status::invalid_argument(
        "task_token was signed with a key this server no longer has (rotated out twice since it was issued)");
  }
  const std::string_view signed_part = bytes.substr(0, bytes.size() - kMacSize);
  const Mac mac = hmac(key->keyed.get(), signed_part);
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
