#include "tools/command_line/duration_text.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace reprise::command_line {
namespace {

// Milliseconds in one `unit`, or 0 for a unit this parser does not know.
double milliseconds_per(std::string_view unit) {
  if (unit == "ms") return 1;
  if (unit == "s") return 1e3;
  if (unit == "m") return 60e3;
  if (unit == "h") return 3600e3;
  if (unit == "d") return 86400e3;
  return 0;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_letter(char c) { return c >= 'a' && c <= 'z'; }

}  // namespace

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  constexpr double kMaxMilliseconds = 10'000 * 365.25 * 86400e3;
  double total = 0;
  size_t i = 0;
  bool had_unit = false;
  while (i < text.size()) {
    // A number: digits, optionally a fraction ("1.5"); no sign, no exponent.
    const size_t number_begin = i;
    while (i < text.size() && is_digit(text[i])) ++i;
    const size_t integer_digits = i - number_begin;
    size_t fraction_digits = 0;
    if (i < text.size() && text[i] == '.') {
      ++i;
      const size_t fraction_begin = i;
      while (i < text.size() && is_digit(text[i])) ++i;
      fraction_digits = i - fraction_begin;
    }
    if (integer_digits == 0 && fraction_digits == 0) return std::nullopt;
    // Digits only, so strtod reads exactly them (and in the "C" way: no
    // locale decimal comma can appear in them).
    const double number = std::strtod(std::string(text.substr(number_begin, i - number_begin)).c_str(), nullptr);
    const size_t unit_begin = i;
    while (i < text.size() && is_letter(text[i])) ++i;
    const std::string_view unit = text.substr(unit_begin, i - unit_begin);
    if (unit.empty()) {
      // A bare number is seconds, and only as the whole text ("1h30" is a typo).
      if (had_unit || i != text.size()) return std::nullopt;
      total += number * 1e3;
      break;
    }
    const double per = milliseconds_per(unit);
    if (per == 0) return std::nullopt;
    total += number * per;
    had_unit = true;
    if (total > kMaxMilliseconds) return std::nullopt;
  }
  if (text.empty() || !(total <= kMaxMilliseconds)) return std::nullopt;
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(total)));
}

}  // namespace reprise::command_line
