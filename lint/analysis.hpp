// The whole-program check: from every workflow root, follow calls through the
// merged facts and report each hazard a workflow can reach, with the chain of
// calls that leads to it.
#pragma once

#include <string>
#include <vector>

#include "lint/config.hpp"
#include "lint/facts.hpp"
#include "lint/rules.hpp"

namespace reprise::lint {

// One step of the chain: "checkout calls compute_fee (orders.cpp:42:15)".
struct ChainStep {
  std::string function;
  std::string does;  // "calls compute_fee", "calls std::chrono::system_clock::now"
  Location where;
};

struct Finding {
  const Rule* rule = nullptr;
  std::string workflow;
  Location where;  // in the workflow: where the chain starts
  std::vector<ChainStep> chain;

  std::string message() const;
};

struct AnalysisOptions {
  bool strict = false;  // report calls the linter cannot follow
  // Every unit of the compile database was read: the program's overrides
  // are all in sight, so a virtual call's candidates are known.
  bool whole_program = false;
};

// Every finding, sorted by location, then rule, then workflow.
std::vector<Finding> analyze(const Program& program, const Config& config, const AnalysisOptions& options);

}  // namespace reprise::lint
