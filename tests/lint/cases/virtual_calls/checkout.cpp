// Virtual calls and tables of function pointers, followed to every function
// that may run (issue 18, family 5). Linted alone (expected-partial.txt, with
// --strict), this unit does not see surge.cpp: SurgePricing::price's body is
// not in sight, and the calls on Pricing are reported as unresolved instead.
#include <ctime>

#include "pricing.hpp"
#include "reprise/workflow.hpp"

// A virtual call whose only override with a clock is in another unit.
reprise::Workflow<long> checkout(reprise::WorkflowContext&, long cents) {
  const Pricing& pricing = default_pricing();
  co_return pricing.price(cents);  // expect[!checkout.cpp]: reprise-clock // expect[checkout.cpp]: reprise-unresolved
}

// `delete` through a base with a virtual destructor runs the derived one.
struct Timer {
  virtual ~Timer() = default;
};
struct WallTimer : Timer {
  ~WallTimer() override { started_ = std::time(nullptr); }
  long started_ = 0;
};
Timer* make_timer();  // defined in a library the linter does not read
void discard(Timer* timer) { delete timer; }
reprise::Workflow<int> times(reprise::WorkflowContext&) {
  discard(make_timer());  // expect: reprise-clock
  co_return 0;
}

// A hierarchy defined in this file: no other unit can derive from it, so
// this unit sees every override even when linted alone.
class Fee {
 public:
  virtual ~Fee() = default;
  virtual long of(long cents) const { return cents / 100; }
};
class StampedFee : public Fee {
 public:
  long of(long cents) const override { return cents + static_cast<long>(std::time(nullptr) % 2); }
};
long fee(const Fee& f, long cents) { return f.of(cents); }
reprise::Workflow<long> charges_fee(reprise::WorkflowContext&, long cents) {
  StampedFee stamped;
  co_return fee(stamped, cents);  // expect: reprise-clock
}

// A constant table of function pointers: each function in it may be called.
long standard_rate(long cents) { return cents; }
long timed_rate(long cents) { return cents + std::time(nullptr) % 7; }
using Rate = long (*)(long);
constexpr Rate kRates[] = {&standard_rate, &timed_rate};
reprise::Workflow<long> rated(reprise::WorkflowContext&, int which, long cents) {
  co_return kRates[which](cents);  // expect: reprise-clock
}

// Negative: every override in sight is deterministic, the table holds only
// deterministic functions, and calls on objects named by value are direct.
// Linted alone, Rounding (in a header) may have overrides elsewhere.
long plain_rate(long cents) { return cents * 2; }
constexpr Rate kPlainRates[] = {&standard_rate, &plain_rate};
reprise::Workflow<long> rounded(reprise::WorkflowContext&, int which, long cents) {
  BankersRounding bankers;
  const Rounding& rounding = bankers;
  FlatPricing flat;
  const Fee plain;
  long rounded = rounding.round(kPlainRates[which](cents));  // expect[checkout.cpp]: reprise-unresolved
  co_return rounded + plain.of(cents) + flat.price(cents);
}
