// `// reprise-lint: ignore` and `// reprise-lint: ignore[rule-id, ...] reason`
// comments. One after code silences findings on its line; one on a line of its
// own silences the line below it, and above a function the whole function.
#pragma once

#include <map>
#include <string_view>

#include "lint/facts.hpp"

namespace reprise::lint {

class SuppressionComments {
 public:
  // Reads every suppression comment in a file's text.
  explicit SuppressionComments(std::string_view text);

  // What is silenced at this 1-based line.
  Suppressions at(unsigned line) const;

 private:
  std::map<unsigned, Suppressions> trailing_;    // after code: this line
  std::map<unsigned, Suppressions> standalone_;  // alone on a line: the next line
};

// The rules one comment silences; empty if the line has no such comment.
// Exposed for tests.
Suppressions parse_suppression(std::string_view line);

}  // namespace reprise::lint
