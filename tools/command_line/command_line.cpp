#include "tools/command_line/command_line.hpp"

#include <charconv>
#include <iostream>

#include "tools/command_line/duration_text.hpp"

namespace reprise::command_line {

const char* version() { return REPRISE_VERSION; }

void set_up(CLI::App& app) {
  app.set_help_all_flag("--help-all", "Print the help of every command and exit");
  app.set_version_flag("--version", app.get_name() + " " + version(), "Print the version and exit");
  // Subcommands made after this inherit it.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

CLI::Option* add_duration_flag(CLI::App& app, const std::string& names,
                               std::function<void(std::chrono::milliseconds)> set, const std::string& description) {
  CLI::Validator duration(
      [](std::string& text) -> std::string {
        if (parse_duration(text)) return "";
        return "'" + text + "' is not a duration (such as 90s, 1h30m, 7d, 250ms, or seconds: 0.5)";
      },
      "");
  return app
      .add_option_function<std::string>(
          names, [set = std::move(set)](const std::string& text) { set(*parse_duration(text)); }, description)
      ->check(duration)
      ->type_name("DURATION");
}

CLI::Validator whole_number(int64_t min, int64_t max) {
  const std::string range = max == INT64_MAX ? std::to_string(min) + " or more"
                                             : "from " + std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        int64_t value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error == std::errc() && end == text.data() + text.size() && value >= min && value <= max) return "";
        return "'" + text + "' is not a whole number " + range;
      },
      "");
}

std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // help() shows the subcommand the command line got into, if any.
    std::cerr << app.get_name() << ": " << e.what() << "\n\n" << app.help() << std::flush;
    return 2;
  }
}

}  // namespace reprise::command_line
