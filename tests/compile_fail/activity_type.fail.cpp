#include "prelude.hpp"
reprise::Workflow<std::string> checkout(reprise::WorkflowContext& ctx, Order o) {
  co_return co_await ctx.execute(charge_card, kOptions, o.cents);  // an int64_t, not an Order
}
// expect: ctx.execute: the arguments do not match the activity's parameters
// expect-gcc: but_was_called_with<long int>
// expect-clang: but_was_called_with<long>
