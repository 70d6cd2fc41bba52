// Member functions, constructors, destructors and operators are followed.
#include <cstdio>
#include <ctime>
#include <string>

#include "reprise/workflow.hpp"

class Ledger {
 public:
  Ledger() : opened_(std::time(nullptr)) {}
  ~Ledger() { std::puts("ledger closed"); }
  void post(int amount) { balance_ += amount; }
  long balance() const { return balance_ + opened_ % 2; }

 private:
  long balance_ = 0;
  long opened_;
};

struct Money {
  long cents;
  Money operator+(const Money& other) const {
    if (std::getenv("REPRISE_ROUNDING") != nullptr) return Money{cents + other.cents + 1};
    return Money{cents + other.cents};
  }
};

reprise::Workflow<long> keeps_books(reprise::WorkflowContext&, int amount) {
  Ledger ledger;  // expect: reprise-clock reprise-logging
  ledger.post(amount);
  Money total = Money{1} + Money{2};  // expect: reprise-io
  co_return ledger.balance() + total.cents;
}

// Negative: a plain value class.
struct Counter {
  int n = 0;
  void bump() { ++n; }
};
reprise::Workflow<int> counts(reprise::WorkflowContext&) {
  Counter c;
  c.bump();
  co_return c.n;
}
