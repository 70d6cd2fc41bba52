#include "engine/store/api_keys.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace reprise::engine {

std::string join_key_names(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

std::vector<std::string> split_key_names(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= text.size() && !text.empty()) {
    const size_t end = std::min(text.find(',', pos), text.size());
    out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

Status validate_roles(const std::vector<std::string>& roles) {
  if (roles.empty())
    return Status::invalid_argument("an API key needs at least one role (worker, client, reader, admin)");
  for (const std::string& role : roles) {
    if (std::find(std::begin(kRoleNames), std::end(kRoleNames), role) == std::end(kRoleNames)) {
      return Status::invalid_argument("'" + role + "' is not a role: worker, client, reader or admin");
    }
  }
  return Status::ok();
}

namespace {

bool name_character(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'; }

}  // namespace

Status validate_key_name(const std::string& name) {
  if (name.empty() || name.size() > 64 || !std::all_of(name.begin(), name.end(), name_character)) {
    return Status::invalid_argument("an API key's name has 1 to 64 letters, digits, '.', '_' and '-', not '" + name +
                                    "'");
  }
  return Status::ok();
}

Status validate_key_namespaces(const std::vector<std::string>& namespaces) {
  if (namespaces.empty()) return Status::invalid_argument("an API key needs at least one namespace, or '*' for all");
  for (const std::string& ns : namespaces) {
    const bool ok = ns == "*" || (!ns.empty() && ns.size() <= 64 && std::all_of(ns.begin(), ns.end(), name_character));
    if (!ok) return Status::invalid_argument("'" + ns + "' is not a namespace name, nor '*' for every namespace");
  }
  return Status::ok();
}

std::string new_api_key_secret() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    throw std::runtime_error("OpenSSL's RAND_bytes failed: no random bytes for an API key");
  }
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "rpk_";
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

history::Sha256Digest api_key_hash(std::string_view secret) { return history::Sha256::digest(secret); }

Result<std::vector<ApiKeyRecord>> read_api_keys(SqliteDb& db) {
  Result<Statement> s =
      db.prepare("SELECT name, sha256, namespaces, roles, created_at, revoked_at FROM api_keys ORDER BY name");
  if (!s) return s.status();
  std::vector<ApiKeyRecord> out;
  while (true) {
    Result<bool> row = s->step();
    if (!row) return row.status();
    if (!*row) return out;
    ApiKeyRecord key;
    key.name = s->column_text(0);
    if (!history::digest_from_bytes(s->column_blob(1), key.sha256)) {
      return Status::data_loss("database '" + db.path() + "': API key '" + key.name + "' has a damaged hash");
    }
    key.namespaces = split_key_names(s->column_text(2));
    key.roles = split_key_names(s->column_text(3));
    key.created_at = from_unix_nanos(s->column_int(4));
    if (!s->column_is_null(5)) key.revoked_at = from_unix_nanos(s->column_int(5));
    out.push_back(std::move(key));
  }
}

}  // namespace reprise::engine
