// NamespaceRegistry: the engine's view of the store's namespaces, kept in
// memory so that checking a request's namespace never reads the store.
// Namespaces are created and changed only through it (the engine is the
// store's one writer), so the copy stays the store's.
//
// Thread safety: all methods may be called from any thread; the writes wait
// for the store's commit (never call them on the store's writer thread).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/store/store.hpp"

namespace reprise::engine {

inline constexpr const char* kDefaultNamespace = "default";

class NamespaceRegistry {
 public:
  // Reads the store's namespaces.
  static Result<std::unique_ptr<NamespaceRegistry>> load(Store& store);

  // "" becomes the default namespace; a name not registered is NOT_FOUND,
  // naming it.
  Status check(std::string& name) const;
  Result<NamespaceRecord> get(std::string name) const;
  std::vector<NamespaceRecord> all() const;  // by name

  // INVALID_ARGUMENT for a bad name, description or retention; ALREADY_EXISTS
  // for a name taken.
  Result<NamespaceRecord> create(NamespaceRecord record);
  // `change` edits a copy of the current record (its name stays), which is
  // then stored; updates run one at a time.
  Result<NamespaceRecord> update(const std::string& name, const std::function<Status(NamespaceRecord&)>& change);

 private:
  NamespaceRegistry(Store& store, std::vector<NamespaceRecord> records);

  Store& store_;
  std::mutex write_mu_;  // one create or update at a time: read, change, store, publish
  mutable std::mutex mu_;
  std::map<std::string, NamespaceRecord> records_;
};

// What a namespace may be called: 1 to 64 of letters, digits, '.', '_' and
// '-' (so '*', which API keys use for "every namespace", is not a name).
Status validate_namespace_name(const std::string& name);

}  // namespace reprise::engine
