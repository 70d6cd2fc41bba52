#include "history/sha256.hpp"

#include <openssl/evp.h>

#include <cstring>
#include <new>

namespace reprise::history {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) throw std::bad_alloc();
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::update(std::string_view bytes) { EVP_DigestUpdate(ctx_, bytes.data(), bytes.size()); }

Sha256Digest Sha256::finish() {
  Sha256Digest d{};
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx_, d.data(), &n);
  return d;
}

Sha256Digest Sha256::digest(std::string_view bytes) {
  Sha256 h;
  h.update(bytes);
  return h.finish();
}

std::string to_hex(const Sha256Digest& digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(64);
  for (uint8_t b : digest) {
    s.push_back(kHex[b >> 4]);
    s.push_back(kHex[b & 15]);
  }
  return s;
}

std::string_view as_bytes(const Sha256Digest& digest) {
  return {reinterpret_cast<const char*>(digest.data()), digest.size()};
}

bool digest_from_bytes(std::string_view bytes, Sha256Digest& out) {
  if (bytes.size() != out.size()) return false;
  std::memcpy(out.data(), bytes.data(), out.size());
  return true;
}

}  // namespace reprise::history
