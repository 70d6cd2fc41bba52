// reprise-global-write and reprise-global-read: state with static storage
// duration survives from one replay to the next.
#include <atomic>
#include <string>
#include <vector>

#include "reprise/workflow.hpp"

int attempts = 0;
std::vector<std::string> audit;
std::atomic<int> started{0};
double rate = 1.5;
const int kLimit = 3;
constexpr double kFee = 0.25;

struct Registry {
  static int count;
};
int Registry::count = 0;

reprise::Workflow<int> mutates(reprise::WorkflowContext&) {
  attempts++;                  // expect: reprise-global-write
  audit.push_back("started");  // expect: reprise-global-write
  started.fetch_add(1);        // expect: reprise-global-write
  Registry::count = 7;         // expect: reprise-global-write
  static int calls = 0;
  calls += 1;             // expect: reprise-global-write
  int& alias = attempts;  // expect: reprise-global-write
  co_return alias;
}

reprise::Workflow<double> reads(reprise::WorkflowContext&, double amount) {
  co_return amount* rate;  // expect: reprise-global-read
}

// Negative: constants.
reprise::Workflow<double> constants(reprise::WorkflowContext&, double amount) { co_return amount* kFee + kLimit; }
