// What every Reprise binary's command line shares, on CLI11: --version, flags
// that take a duration, and one way to report a bad command line.
// Thread rule: call from main, before any thread starts.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace reprise::command_line {

// The project's version, from meson's project() ("0.1.0").
const char* version();

// The app every binary starts from: its name in messages and help, --help
// and -h, --help-all (every subcommand's too), --version (prints "NAME VERSION"), and "--flag value" or
// "--flag=value" for every flag. A flag given twice takes the last value, as
// scripts that add to a command line expect.
void set_up(CLI::App& app);

// A flag taking a duration (duration_text.hpp: "90s", "1h30m", "7d",
// "250ms", a bare number of seconds). `set` gets the value once parsed; a
// text that names no duration is a usage error naming the flag. The returned
// option lives as long as `app`.
CLI::Option* add_duration_flag(CLI::App& app, const std::string& names,
                               std::function<void(std::chrono::milliseconds)> set, const std::string& description);

// Checks a flag's text is a whole number in [min, max] ("abc", "1.5" and
// "-3" are usage errors naming the flag and the range).
CLI::Validator whole_number(int64_t min, int64_t max = INT64_MAX);

// Parses the command line into `app`. Nothing when the program goes on; else
// the exit code: 0 after --help or --version (printed to stdout), 2 after a
// bad command line, with the error (it names the flag or word) and the usage
// of the command it was in on stderr.
std::optional<int> parse(CLI::App& app, int argc, char** argv);

}  // namespace reprise::command_line
