// `environ` declared by the program itself, not by <unistd.h>, is still the
// process environment (reprise-io).
#include "reprise/workflow.hpp"

extern char** environ;

reprise::Workflow<int> reads_own_environ(reprise::WorkflowContext&) {
  int n = 0;
  for (char** entry = environ; *entry != nullptr; ++entry) ++n;  // expect: reprise-io
  co_return n;
}
