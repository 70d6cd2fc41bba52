// Structured logs: one line per event on stderr, in logfmt (the default)
//   ts=2026-12-02T21:24:42.123Z level=info msg="workflow closed" workflow_id=order-1 status=COMPLETED
// or in JSON, one object per line, keys in the same order
//   {"ts":"2026-12-02T21:24:42.123Z","level":"info","msg":"workflow closed","workflow_id":"order-1",...}
// so a person can read them and a log pipeline can parse them without a
// schema. Control bytes (NUL included) are escaped in both; in JSON, bytes
// that are not UTF-8 become U+FFFD, so every line parses.
//
// Thread safety: all functions may be called from any thread; a line is
// written whole.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include "history/status.hpp"

namespace reprise::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

void set_level(Level level);
bool enabled(Level level);
// "debug", "info", "warn", "error" or "off".
Result<Level> parse_level(std::string_view name);

enum class Format { kLogfmt, kJson };

void set_format(Format format);
// "logfmt" or "json".
Result<Format> parse_format(std::string_view name);

struct Field {
  std::string_view key;
  std::string value;
};

// Writes the line when `level` is enabled, else nothing: a caller that picks
// the level at run time need not check it. The helpers below check first so
// that a line left out costs no formatting of its fields.
void write(Level level, std::string_view message, std::initializer_list<Field> fields = {});

inline void debug(std::string_view m, std::initializer_list<Field> f = {}) {
  if (enabled(Level::kDebug)) write(Level::kDebug, m, f);
}
inline void info(std::string_view m, std::initializer_list<Field> f = {}) {
  if (enabled(Level::kInfo)) write(Level::kInfo, m, f);
}
inline void warn(std::string_view m, std::initializer_list<Field> f = {}) {
  if (enabled(Level::kWarn)) write(Level::kWarn, m, f);
}
inline void error(std::string_view m, std::initializer_list<Field> f = {}) {
  if (enabled(Level::kError)) write(Level::kError, m, f);
}

// The line write() prints in `format` with `timestamp`, without its newline.
std::string format_line(Format format, std::string_view timestamp, Level level, std::string_view message,
                        std::initializer_list<Field> fields);

}  // namespace reprise::log
