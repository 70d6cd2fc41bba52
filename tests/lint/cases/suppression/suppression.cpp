// `// reprise-lint: ignore` on the line, the line above, or above a function.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "reprise/workflow.hpp"

reprise::Workflow<long> silenced_lines(reprise::WorkflowContext&) {
  long a = std::rand();  // reprise-lint: ignore[reprise-random] seeded test fixture
  // reprise-lint: ignore
  long b = std::chrono::system_clock::now().time_since_epoch().count();
  std::printf("%ld\n", a + b);  // reprise-lint: ignore[reprise-logging, reprise-io] debug output
  co_return a + b;
}

// The wrong rule silences nothing.
reprise::Workflow<long> wrong_rule(reprise::WorkflowContext&) {
  long a = std::rand();  // reprise-lint: ignore[reprise-clock]  // expect: reprise-random
  co_return a;
}

// reprise-lint: ignore[reprise-clock] the timestamp only names a debug file
long debug_stamp() { return std::chrono::system_clock::now().time_since_epoch().count(); }

long helper_with_rand() { return std::rand(); }

reprise::Workflow<long> through_helpers(reprise::WorkflowContext&) {
  long stamp = debug_stamp();
  long r = helper_with_rand();               // reprise-lint: ignore[reprise-random] the chain is silenced at the call
  co_return stamp + r + helper_with_rand();  // expect: reprise-random
}
