// Calls the linter cannot follow: through a function pointer, a virtual
// function or std::function. Silent by default (expected.txt), reported with
// --strict (expected-strict.txt).
#include <functional>

#include "reprise/workflow.hpp"

struct Pricing {
  virtual ~Pricing() = default;
  virtual int price() const { return 1; }
};

int one() { return 1; }

reprise::Workflow<int> indirect(reprise::WorkflowContext&, int which) {
  int (*fn)() = one;
  Pricing base;
  const Pricing& pricing = base;
  std::function<int()> callback = [] { return 2; };
  int a = fn();             // expect[--strict]: reprise-unresolved
  int b = pricing.price();  // expect[--strict]: reprise-unresolved
  int c = callback();       // expect[--strict]: reprise-unresolved
  co_return a + b + c + which;
}

// Negative: a virtual call on an object (not a reference) is direct.
reprise::Workflow<int> direct(reprise::WorkflowContext&) {
  Pricing p;
  co_return p.price();
}
