// Lambdas: called directly, passed to algorithms, and workflow lambdas.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
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

// ctx.side_effect(f) records f's result: the callable written in the call is
// the documented place for a non-deterministic value, and is not followed.
std::string config_value() {
  const char* value = std::getenv("REPRISE_REGION");
  return value != nullptr ? value : "";
}

reprise::Workflow<long> records_side_effects(reprise::WorkflowContext& ctx) {
  long started = ctx.side_effect([] { return std::chrono::system_clock::now().time_since_epoch().count(); });
  std::string region = ctx.side_effect(config_value);
  co_return started + static_cast<long>(region.size());
}

// The exemption is the call's own argument: the same helper called outside
// side_effect is still checked.
reprise::Workflow<long> reads_config_directly(reprise::WorkflowContext& ctx) {
  std::string region = ctx.side_effect(config_value);
  co_return static_cast<long>(region.size() + config_value().size());  // expect: reprise-io
}
