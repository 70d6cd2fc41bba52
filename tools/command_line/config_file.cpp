#include "tools/command_line/config_file.hpp"

#include <sstream>
#include <toml.hpp>

namespace reprise::command_line {

namespace {

std::string where(const toml::value& value) {
  const toml::source_location at = value.location();
  return at.file_name() + ":" + std::to_string(at.line());
}

std::string scalar_text(const toml::value& value, const std::string& key) {
  if (value.is_string()) return value.as_string().str;
  if (value.is_integer()) return std::to_string(value.as_integer());
  if (value.is_boolean()) return value.as_boolean() ? "true" : "false";
  if (value.is_floating()) {
    std::ostringstream out;
    out << value.as_floating();
    return out.str();
  }
  throw CLI::ConfigError(where(value) + ": '" + key + "' takes a string, a number or true/false");
}

// Reads the TOML with toml11 (CLI11's own reader accepts much that is not
// TOML and gives no line numbers), checking every key against the app's
// flags, so a misspelt key is found instead of ignored.
class TomlFlags : public CLI::Config {
 public:
  explicit TomlFlags(CLI::App& app) : app_(app) {}

  std::string to_config(const CLI::App* app, bool defaults, bool descriptions, std::string prefix) const override {
    return CLI::ConfigTOML().to_config(app, defaults, descriptions, std::move(prefix));
  }

  std::vector<CLI::ConfigItem> from_config(std::istream& in) const override {
    const std::string file = app_.get_config_ptr()->as<std::string>();
    toml::value document;
    try {
      document = toml::parse(in, file);
    } catch (const toml::exception& e) {
      throw CLI::ConfigError("config file " + file + " is not valid TOML:\n" + e.what());
    }
    std::vector<CLI::ConfigItem> items;
    for (const auto& [raw_key, value] : document.as_table()) {
      std::string key = raw_key;
      std::replace(key.begin(), key.end(), '_', '-');
      const CLI::Option* flag = app_.get_option_no_throw("--" + key);
      if (flag == nullptr || flag == app_.get_config_ptr() || flag == app_.get_help_ptr() || key == "version") {
        throw CLI::ConfigError(where(value) + ": unknown key '" + raw_key + "' (" + app_.get_name() +
                               " has no flag --" + key + "; --help lists them)");
      }
      if (value.is_table()) throw CLI::ConfigError(where(value) + ": '" + raw_key + "' is a table, not a flag's value");
      CLI::ConfigItem item;
      item.name = key;
      if (value.is_array()) {
        for (const toml::value& element : value.as_array()) item.inputs.push_back(scalar_text(element, raw_key));
      } else {
        item.inputs.push_back(scalar_text(value, raw_key));
      }
      items.push_back(std::move(item));
    }
    return items;
  }

 private:
  CLI::App& app_;
};

}  // namespace

void add_config_flag(CLI::App& app) {
  app.set_config("--config", "",
                 "Read flags from this TOML file (one `flag-name = value` per line); flags on the "
                 "command line override it")
      ->type_name("FILE");
  app.config_formatter(std::make_shared<TomlFlags>(app));
}

}  // namespace reprise::command_line
