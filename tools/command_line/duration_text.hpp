// Durations as people type them on a command line: "90s", "1h30m", "7d",
// "250ms", "1.5h"; a bare number is seconds ("0.2", "60"), as the flags took
// before units. The one parser every binary's duration flags use.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace reprise::command_line {

// The duration `text` names, to the millisecond (rounded), or nothing when it
// names none: empty, negative, an unknown unit ("5x"), a number without a
// unit after one with ("1h30"), or more than 10,000 years.
// Units: ms, s, m, h, d; components add up ("1h30m" is 5400 s).
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

}  // namespace reprise::command_line
