// Parses the translation units and collects their facts, `jobs` units at a
// time. Each job is a child process (fork) that parses its share of the
// units and writes their facts to a file; the parent reads them back.
// Processes, not threads: under ThreadSanitizer, clang's library (14, when
// it was measured) showed data races between tools on different threads.
#pragma once

#include <clang/Tooling/ArgumentsAdjusters.h>
#include <clang/Tooling/CompilationDatabase.h>

#include <string>
#include <vector>

#include "lint/facts.hpp"

namespace reprise::lint {

struct ParsedUnits {
  // One per file, in the order of `files` (whatever the jobs), so the
  // merged program is the same with any number of jobs.
  std::vector<UnitFacts> units;
  std::vector<std::string> failed;  // files that did not parse (errors went to stderr)
};

// Each file is parsed with its command from `db`, changed by `adjuster`.
// With jobs > 1 it forks: call it while the process has one thread.
ParsedUnits parse_units(const clang::tooling::CompilationDatabase& db, const std::vector<std::string>& files,
                        const clang::tooling::ArgumentsAdjuster& adjuster, unsigned jobs);

}  // namespace reprise::lint
