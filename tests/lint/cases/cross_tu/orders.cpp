// A workflow in one translation unit reaches a clock two units away:
// orders.cpp -> fees.cpp -> rates.cpp.
#include "fees.hpp"
#include "reprise/workflow.hpp"

reprise::Workflow<double> checkout(reprise::WorkflowContext& ctx, double amount) {
  co_await ctx.sleep(std::chrono::seconds(1));
  co_return amount + compute_fee(amount);  // expect: reprise-clock
}
