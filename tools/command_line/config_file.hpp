// `--config FILE`: a binary's flags read from a TOML file.
//
// Each top-level key is a flag's long name without its dashes (`db`,
// `max-pending-requests`; `max_pending_requests` is the same key), and its
// value what the flag would take: a string, a number, true/false for a flag
// without a value, an array for a flag given several times. The command line
// overrides the file. A key that names no flag, a table, or a TOML syntax
// error is a usage error naming the file and the line.
//
// Thread rule: call from main, before any thread starts.
#pragma once

#include <CLI/CLI.hpp>

namespace reprise::command_line {

// Adds `--config FILE` to `app` (set up with set_up()); parse() then reads
// the file when the flag is given.
void add_config_flag(CLI::App& app);

}  // namespace reprise::command_line
