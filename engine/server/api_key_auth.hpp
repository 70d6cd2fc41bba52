// ApiKeyAuth: who may make a call. A client sends "authorization: Bearer
// <key>" (gRPC metadata); the key's SHA-256 is looked up among the store's
// API keys (engine/store/api_keys.hpp), and the key's roles and namespaces
// decide. While the store holds no key at all the server is open, as it was
// before keys: any call goes through. Once any key exists (a revoked one
// counts, so revoking the last key never opens the server) every call needs
// a live key.
//
// The keys are read again every `refresh` (a second by default) on a thread
// of its own, so a key created or revoked with `reprise admin key`, which
// writes the database file, takes effect within that time while the server
// runs; a call never reads the store.
//
// Thread safety: authorize() and keys_defined() from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include "engine/store/store.hpp"

namespace reprise::engine {

enum class Role : unsigned { kWorker = 1, kClient = 2, kReader = 4, kAdmin = 8 };

// The roles any one of which lets a call through; admin always does.
class Roles {
 public:
  constexpr Roles(std::initializer_list<Role> roles) {
    for (Role r : roles) bits_ |= static_cast<unsigned>(r);
  }
  constexpr bool any_of(unsigned held) const { return (held & (bits_ | static_cast<unsigned>(Role::kAdmin))) != 0; }
  // "reader or admin", for a refusal.
  std::string names() const;

 private:
  unsigned bits_ = 0;
};

class ApiKeyAuth {
 public:
  // Reads the keys once (an error here stops the server from starting), then
  // every `refresh`.
  static Result<std::unique_ptr<ApiKeyAuth>> start(Store& store,
                                                   std::chrono::milliseconds refresh = std::chrono::seconds(1));
  ~ApiKeyAuth();
  ApiKeyAuth(const ApiKeyAuth&) = delete;
  ApiKeyAuth& operator=(const ApiKeyAuth&) = delete;

  // OK when `authorization` (the metadata value, "" when absent) carries a
  // live key holding one of `needed` for `namespace_id` ("" is 'default';
  // "*" asks for every namespace: namespace-less calls); UNAUTHENTICATED
  // for no, an unknown or a revoked key; PERMISSION_DENIED naming the key
  // and the role or namespace it lacks, and `call`.
  Status authorize(std::string_view authorization, Roles needed, std::string namespace_id, std::string_view call) const;
  // Whether the key may see `namespace_id` at all (any role): what
  // ListNamespaces shows it. True while the server is open.
  bool may_see(std::string_view authorization, const std::string& namespace_id) const;
  // Whether the store holds any key, revoked ones included.
  bool keys_defined() const;

 private:
  struct Grant {
    std::string name;
    std::set<std::string> namespaces;  // "*": all
    unsigned roles = 0;
    bool revoked = false;
  };
  using Grants = std::map<history::Sha256Digest, Grant>;
  explicit ApiKeyAuth(Store& store, std::chrono::milliseconds refresh) : store_(store), refresh_(refresh) {}
  Status reload();
  void refresh_loop();
  std::shared_ptr<const Grants> grants() const;
  // The live key of `grants` that `authorization` carries, or why there is
  // none.
  static Result<const Grant*> authenticate(const Grants& grants, std::string_view authorization);

  Store& store_;
  const std::chrono::milliseconds refresh_;
  mutable std::mutex mu_;
  std::shared_ptr<const Grants> grants_;  // swapped whole at each reload
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace reprise::engine
