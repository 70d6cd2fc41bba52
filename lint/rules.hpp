// The rules reprise-lint checks: an id, a default severity, what the finding
// says and the Reprise replacement to use instead.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace reprise::lint {

enum class Severity { kWarning, kError };

struct Rule {
  std::string_view id;
  Severity severity;
  std::string_view problem;  // completes "workflow 'x' ..."
  std::string_view hint;     // what to write instead
  std::string_view why;      // what goes wrong on replay (SARIF fullDescription)
};

// Every rule, in the order the docs list them.
const std::vector<Rule>& all_rules();

// The rule with this id; throws std::invalid_argument naming it when unknown.
const Rule& rule(std::string_view id);

// The rule a call to this function (qualified name, no template arguments,
// e.g. "std::chrono::system_clock::now") breaks, if any.
std::optional<std::string_view> rule_for_callee(const std::string& qualified_name);

// The rule a use of this global variable breaks (std::cout, stdout, environ).
std::optional<std::string_view> rule_for_system_global(const std::string& qualified_name);

// fnmatch-style match where `*` also crosses "::" and "/".
bool glob_match(const std::string& pattern, const std::string& text);

inline const char* severity_name(Severity s) { return s == Severity::kError ? "error" : "warning"; }

}  // namespace reprise::lint
