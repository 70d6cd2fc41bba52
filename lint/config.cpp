#include "lint/config.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "lint/rules.hpp"

namespace reprise::lint {

bool Config::allowed(const std::string& function) const {
  for (const auto& pattern : allow) {
    if (glob_match(pattern, function)) return true;
  }
  return false;
}

std::optional<std::string> Config::denied_rule(const std::string& function) const {
  for (const auto& d : deny) {
    if (glob_match(d.pattern, function)) return d.rule;
  }
  return std::nullopt;
}

bool Config::excluded(const std::string& path) const {
  std::error_code ec;
  auto relative = std::filesystem::relative(path, std::filesystem::current_path(), ec).string();
  for (const auto& pattern : exclude) {
    if (glob_match(pattern, path) || (!ec && glob_match(pattern, relative))) return true;
  }
  return false;
}

Config parse_config(const std::string& text, const std::string& origin) {
  Config config;
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::string directive, pattern, extra, more;
    if (!(words >> directive)) continue;
    auto where = origin + ":" + std::to_string(number) + ": ";
    if (!(words >> pattern)) throw std::runtime_error(where + "'" + directive + "' needs a pattern");
    words >> extra;
    if (words >> more) throw std::runtime_error(where + "unexpected '" + more + "'");
    if (directive == "allow" || directive == "exclude") {
      if (!extra.empty()) throw std::runtime_error(where + "unexpected '" + extra + "'");
      (directive == "allow" ? config.allow : config.exclude).push_back(pattern);
    } else if (directive == "deny") {
      std::string rule_id = extra.empty() ? "reprise-denied" : extra;
      try {
        rule(rule_id);
      } catch (const std::invalid_argument& e) {
        throw std::runtime_error(where + e.what());
      }
      config.deny.push_back({pattern, rule_id});
    } else {
      throw std::runtime_error(where + "unknown directive '" + directive + "' (expected allow, deny or exclude)");
    }
  }
  return config;
}

Config load_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read config file " + path);
  std::stringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), path);
}

}  // namespace reprise::lint
