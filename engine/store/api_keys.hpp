// API keys as they are made and stored: the secret a client sends
// ("authorization: Bearer rpk_<64 hex digits>", 32 random bytes), the roles
// a key may hold, and the api_keys table of a SQLite store, which
// SqliteStore::api_keys() reads for the server (`reprise admin key` writes
// it through key_database.hpp). Only the SHA-256 of a secret is stored: a copy of the
// database gives no key away.
//
// Thread safety: each function uses `db` alone, as SqliteDb requires; the
// others share nothing.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/store/records.hpp"
#include "engine/store/sqlite_db.hpp"

namespace reprise::engine {

// The roles, by the name keys store: worker polls and completes tasks;
// client starts, signals, queries, cancels and terminates; reader
// describes, lists and reads histories; admin may do everything, namespace
// management included.
inline constexpr const char* kRoleNames[] = {"worker", "client", "reader", "admin"};
// INVALID_ARGUMENT naming a role that is not one of kRoleNames, or a
// namespace that is neither a namespace name nor "*" (every namespace).
Status validate_roles(const std::vector<std::string>& roles);
// A key's name: 1 to 64 letters, digits, '.', '_' and '-'.
Status validate_key_name(const std::string& name);
Status validate_key_namespaces(const std::vector<std::string>& namespaces);

// A key's namespaces and roles as the stores keep them, in one text column
// each: the names joined by ','. (Names hold no ','.)
std::string join_key_names(const std::vector<std::string>& names);
std::vector<std::string> split_key_names(const std::string& column);

// A new secret from OpenSSL's CSPRNG: "rpk_" and 64 hex digits.
std::string new_api_key_secret();
// What the store keeps of `secret`.
history::Sha256Digest api_key_hash(std::string_view secret);

// Every key of a SQLite store, revoked ones included, by name.
Result<std::vector<ApiKeyRecord>> read_api_keys(SqliteDb& db);

}  // namespace reprise::engine
