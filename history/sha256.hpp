// SHA-256 over OpenSSL's libcrypto, incremental so a large blob is hashed as
// it streams past.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

struct evp_md_ctx_st;

namespace reprise::history {

using Sha256Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::string_view bytes);
  Sha256Digest finish();  // the object must not be used afterwards

  static Sha256Digest digest(std::string_view bytes);

 private:
  evp_md_ctx_st* ctx_;
};

std::string to_hex(const Sha256Digest& digest);
std::string_view as_bytes(const Sha256Digest& digest);
// Accepts exactly 32 raw bytes.
bool digest_from_bytes(std::string_view bytes, Sha256Digest& out);

}  // namespace reprise::history
