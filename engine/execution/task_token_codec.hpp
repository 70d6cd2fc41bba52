// TaskTokenCodec: the task tokens a worker is handed and hands back.
//
// A token names the task it was issued for (internal::TaskToken: execution,
// scheduled and started event, attempt, or a query). Its bytes are
//
//   version (1 byte, 1) | key id (4 bytes, big-endian) | TaskToken proto | HMAC-SHA256 (32 bytes)
//
// with the HMAC, under the server key the id names, over everything before
// it. A token cannot be built from the ids GetHistory shows, nor an issued
// one altered (another attempt, another workflow): decode() refuses both with
// INVALID_ARGUMENT. The keys live in the database (Store::task_token_keys), so
// tokens outlive a restart; the first key signs, every key verifies, and
// rotating adds a new first key and keeps the one before it, so the tokens
// of tasks running at the rotation stay good.
//
// Thread safety: immutable after construction; any thread. Each key's HMAC
// context is keyed once, here, and copied per token (EVP_MAC_CTX_dup reads
// it only): keying it per token (OpenSSL's one-shot HMAC fetches the
// algorithm and sets the key up every call) was about 2.5% of the server's
// CPU under the hello benchmark.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/store/store.hpp"
#include "history/status.hpp"
#include "reprise/internal/state.pb.h"

struct evp_mac_ctx_st;

namespace reprise::engine {

class TaskTokenCodec {
 public:
  // `keys` newest first; at least one, each secret at least 16 bytes.
  explicit TaskTokenCodec(std::vector<TaskTokenKey> keys);
  // One random key that lives as long as the codec: for an engine on a store
  // that keeps no keys, and for tests.
  static std::shared_ptr<const TaskTokenCodec> ephemeral();

  std::string encode(const internal::TaskToken& token) const;
  // The token these bytes carry, if this server signed them with a key it
  // still has and they name an execution and a task; else INVALID_ARGUMENT
  // saying why.
  Result<internal::TaskToken> decode(std::string_view bytes) const;

 private:
  struct FreeMacContext {
    void operator()(evp_mac_ctx_st* context) const;
  };
  using MacContext = std::unique_ptr<evp_mac_ctx_st, FreeMacContext>;
  struct Key {
    uint32_t id = 0;
    MacContext keyed;  // HMAC-SHA256 with the key's secret set, never updated
  };
  static MacContext keyed_context(const std::string& secret);
  std::vector<Key> keys_;
};

}  // namespace reprise::engine
