#include "engine/store/task_token_keys.hpp"

#include <openssl/rand.h>

#include <stdexcept>

#include "engine/store/sqlite_db.hpp"

namespace reprise::engine {

namespace {

constexpr size_t kSecretSize = 32;
constexpr size_t kKeysKept = 2;  // the signing key and the one before it

std::string to_hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string format_task_token_keys(const std::vector<TaskTokenKey>& keys) {
  std::string out;
  for (const TaskTokenKey& key : keys) {
    if (!out.empty()) out += ',';
    out += std::to_string(key.id) + ':' + to_hex(key.secret);
  }
  return out;
}

Result<std::vector<TaskTokenKey>> parse_task_token_keys(const std::string& text, const std::string& path) {
  const auto damaged = [&] {
    return Status::data_loss("database '" + path + "' holds damaged task token keys (reprise_meta 'task_token_keys')");
  };
  std::vector<TaskTokenKey> keys;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(pos, end - pos);
    const size_t colon = item.find(':');
    if (colon == std::string::npos || colon == 0 || (item.size() - colon - 1) != 2 * kSecretSize) return damaged();
    TaskTokenKey key;
    for (size_t i = 0; i < colon; ++i) {
      if (item[i] < '0' || item[i] > '9' || key.id > 100'000'000) return damaged();
      key.id = key.id * 10 + static_cast<uint32_t>(item[i] - '0');
    }
    for (size_t i = colon + 1; i < item.size(); i += 2) {
      const int hi = hex_digit(item[i]), lo = hex_digit(item[i + 1]);
      if (hi < 0 || lo < 0) return damaged();
      key.secret.push_back(static_cast<char>(hi << 4 | lo));
    }
    keys.push_back(std::move(key));
    pos = end + 1;
  }
  if (keys.empty()) return damaged();
  return keys;
}

TaskTokenKey new_task_token_key(uint32_t id) {
  TaskTokenKey key{id, std::string(kSecretSize, '\0')};
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key.secret.data()), static_cast<int>(key.secret.size())) != 1) {
    throw std::runtime_error("OpenSSL's RAND_bytes failed: no random bytes for a task token key");
  }
  return key;
}

std::vector<TaskTokenKey> with_new_task_token_key(std::vector<TaskTokenKey> keys) {
  const uint32_t id = keys.empty() ? 1 : keys.front().id + 1;
  keys.insert(keys.begin(), new_task_token_key(id));
  if (keys.size() > kKeysKept) keys.resize(kKeysKept);
  return keys;
}

Result<std::vector<TaskTokenKey>> load_task_token_keys(SqliteDb& db, bool rotate) {
  REPRISE_RETURN_IF_ERROR(db.exec("BEGIN IMMEDIATE"));
  auto result = [&]() -> Result<std::vector<TaskTokenKey>> {
    Result<Statement> read = db.prepare("SELECT value FROM reprise_meta WHERE key = 'task_token_keys'");
    if (!read) return read.status();
    Result<bool> row = read->step();
    if (!row) return row.status();
    std::vector<TaskTokenKey> keys;
    if (*row) {
      Result<std::vector<TaskTokenKey>> stored = parse_task_token_keys(read->column_text(0), db.path());
      if (!stored) return stored.status();
      keys = std::move(*stored);
    }
    if (!keys.empty() && !rotate) return keys;
    keys = with_new_task_token_key(std::move(keys));
    Result<Statement> write = db.prepare(
        "INSERT INTO reprise_meta (key, value) VALUES ('task_token_keys', ?1) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
    if (!write) return write.status();
    REPRISE_RETURN_IF_ERROR(write->bind(1, format_task_token_keys(keys)).run());
    return keys;
  }();
  if (!result) {
    (void)db.exec("ROLLBACK");
    return result.status().with_context("task token keys");
  }
  REPRISE_RETURN_IF_ERROR(db.exec("COMMIT"));
  return result;
}

}  // namespace reprise::engine
