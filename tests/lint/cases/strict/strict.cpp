// Calls the linter cannot follow: through a function pointer, a virtual
// function with an override whose body is in no unit, or std::function.
// Silent by default (expected.txt), reported with --strict
// (expected-strict.txt).
#include <functional>

#include "reprise/workflow.hpp"

struct Pricing {
  virtual ~Pricing() = default;
  virtual int price() const { return 1; }
};

// Its body is in a library the linter does not read.
struct RemotePricing : Pricing {
  int price() const override;
};

int one() { return 1; }
int two() { return 2; }

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

// Negative: a virtual call on an object (not a reference) is direct; a
// constant table's functions are all known.
constexpr int (*kTable[])() = {&one, &two};
reprise::Workflow<int> direct(reprise::WorkflowContext&, int which) {
  Pricing p;
  co_return p.price() + kTable[which]();
}
