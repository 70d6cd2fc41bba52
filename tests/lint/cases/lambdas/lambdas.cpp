// Lambdas: called directly, passed to algorithms, and workflow lambdas.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

#include "reprise/workflow.hpp"

reprise::Workflow<int> sorts(reprise::WorkflowContext&, std::vector<int> values) {
  auto noisy = [] { return std::rand(); };  // expect: reprise-random
  int n = noisy();
  std::sort(values.begin(), values.end(), [](int a, int b) {  // expect: reprise-clock
    return a + std::chrono::steady_clock::now().time_since_epoch().count() % 2 < b;
  });
  co_return n + values.front();
}

// A workflow written as a lambda is a root too.
auto lambda_workflow = [](reprise::WorkflowContext& ctx) -> reprise::Workflow<int> {
  co_await ctx.sleep(std::chrono::seconds(1));
  co_return std::rand();  // expect: reprise-random
};

// Negative: a pure lambda.
reprise::Workflow<int> pure(reprise::WorkflowContext&, std::vector<int> values) {
  std::sort(values.begin(), values.end(), [](int a, int b) { return a > b; });
  co_return values.front();
}
