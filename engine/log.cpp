#include "engine/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

namespace reprise::log {

namespace {

std::atomic<int> current_level{static_cast<int>(Level::kInfo)};
std::atomic<Format> current_format{Format::kLogfmt};

const char* name(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
    default:
      return "off";
  }
}

// logfmt: bare when the value is one plain word, else double-quoted with
// quotes, backslashes and control bytes escaped (\n, \r, \t, else \u00XX).
void append_logfmt_value(std::string& out, std::string_view value) {
  bool plain = !value.empty();
  for (char c : value)
    plain = plain && static_cast<unsigned char>(c) > ' ' && c != '"' && c != '=' && c != '\\' && c != 0x7f;
  if (plain) {
    out += value;
    return;
  }
  out += '"';
  for (char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (byte < 0x20 || byte == 0x7f) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", byte);
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

std::string logfmt_line(std::string_view timestamp, Level level, std::string_view message,
                        std::initializer_list<Field> fields) {
  std::string line = "ts=";
  line += timestamp;
  line += " level=";
  line += name(level);
  line += " msg=";
  append_logfmt_value(line, message);
  for (const Field& f : fields) {
    line += ' ';
    line += f.key;
    line += '=';
    append_logfmt_value(line, f.value);
  }
  return line;
}

std::string json_line(std::string_view timestamp, Level level, std::string_view message,
                      std::initializer_list<Field> fields) {
  nlohmann::ordered_json line;
  line["ts"] = timestamp;
  line["level"] = name(level);
  line["msg"] = message;
  for (const Field& f : fields) line[std::string(f.key)] = f.value;
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(millis));
  return text;
}

}  // namespace

void set_level(Level level) { current_level.store(static_cast<int>(level)); }

bool enabled(Level level) { return static_cast<int>(level) >= current_level.load(std::memory_order_relaxed); }

Result<Level> parse_level(std::string_view text) {
  for (Level l : {Level::kDebug, Level::kInfo, Level::kWarn, Level::kError, Level::kOff}) {
    if (text == name(l)) return l;
  }
  return Status::invalid_argument("log level must be debug, info, warn, error or off, got '" + std::string(text) + "'");
}

void set_format(Format format) { current_format.store(format); }

Result<Format> parse_format(std::string_view text) {
  if (text == "logfmt") return Format::kLogfmt;
  if (text == "json") return Format::kJson;
  return Status::invalid_argument("log format must be logfmt or json, got '" + std::string(text) + "'");
}

std::string format_line(Format format, std::string_view timestamp, Level level, std::string_view message,
                        std::initializer_list<Field> fields) {
  return format == Format::kJson ? json_line(timestamp, level, message, fields)
                                 : logfmt_line(timestamp, level, message, fields);
}

void write(Level level, std::string_view message, std::initializer_list<Field> fields) {
  if (!enabled(level)) return;
  std::string line = format_line(current_format.load(std::memory_order_relaxed), timestamp(), level, message, fields);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);  // stderr is unbuffered: one write per line
}

}  // namespace reprise::log
