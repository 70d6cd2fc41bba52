// The lint config file (--config). One directive per line, `#` comments:
//
//   allow   PATTERN          calls to matching functions are trusted: not
//                            followed and never a finding
//   deny    PATTERN [RULE]   calls to matching functions are findings
//                            (rule reprise-denied unless RULE is given)
//   exclude PATH-PATTERN     files not linted: no roots, not followed
//
// PATTERNs are qualified names without parameters (`billing::*`,
// `std::chrono::*::now`); `*` matches anything, "::" and "/" included.
// Path patterns match the path as the database gives it or relative to the
// working directory.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace reprise::lint {

struct Config {
  struct Deny {
    std::string pattern;
    std::string rule;
  };
  std::vector<std::string> allow;
  std::vector<Deny> deny;
  std::vector<std::string> exclude;

  bool allowed(const std::string& function) const;
  std::optional<std::string> denied_rule(const std::string& function) const;
  bool excluded(const std::string& path) const;
};

// Reads a config file; throws std::runtime_error naming the file, the line
// and what is wrong with it.
Config load_config(const std::string& path);

// The same from text; `origin` names it in errors.
Config parse_config(const std::string& text, const std::string& origin);

}  // namespace reprise::lint
