#include "prelude.hpp"
reprise::Workflow<std::string> checkout(reprise::WorkflowContext& ctx, Order o) {
  co_return co_await ctx.execute_local(charge_card, kOptions, o);  // a normal activity's options
}
// expect: ctx.execute_local takes reprise::LocalActivityOptions
