// ListWorkflows' page tokens: the sort key of the last record shown (start
// time, workflow id, run id), hex-encoded so any workflow id survives the
// trip. Every store pages its visibility rows with them.
#pragma once

#include <cstdint>
#include <string>

#include "engine/store/records.hpp"

namespace reprise::engine {

inline std::string encode_page_token(const VisibilityRecord& last) {
  const std::string raw =
      std::to_string(to_unix_nanos(last.start_time)) + '\0' + last.key.workflow_id + '\0' + last.key.run_id;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

// false for a token this function did not make.
inline bool decode_page_token(const std::string& token, int64_t& start, std::string& workflow_id, std::string& run_id) {
  if (token.size() % 2 != 0) return false;
  std::string raw;
  for (size_t i = 0; i < token.size(); i += 2) {
    auto nibble = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
    const int hi = nibble(token[i]), lo = nibble(token[i + 1]);
    if (hi < 0 || lo < 0) return false;
    raw += static_cast<char>(hi * 16 + lo);
  }
  const size_t a = raw.find('\0');
  const size_t b = a == std::string::npos ? a : raw.find('\0', a + 1);
  if (b == std::string::npos) return false;
  try {
    size_t used = 0;
    start = std::stoll(raw.substr(0, a), &used);
    if (used != a) return false;
  } catch (const std::exception&) {
    return false;
  }
  workflow_id = raw.substr(a + 1, b - a - 1);
  run_id = raw.substr(b + 1);
  return true;
}

}  // namespace reprise::engine
