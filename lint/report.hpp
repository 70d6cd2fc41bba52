// Writes findings as compiler-style text, JSON, or SARIF 2.1.0 (which GitHub
// code scanning accepts).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "lint/analysis.hpp"

namespace reprise::lint {

enum class Format { kText, kJson, kSarif };

struct Summary {
  size_t files = 0;  // translation units read
  size_t workflows = 0;
};

// `docs_uri` is where docs/lint.md can be read (SARIF's helpUri is it plus
// "#RULE-ID", the rule's section); the other formats do not use it.
void write_report(std::ostream& out, Format format, const std::vector<Finding>& findings, const Summary& summary,
                  const std::string& docs_uri);

}  // namespace reprise::lint
