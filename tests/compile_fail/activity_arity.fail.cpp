#include "prelude.hpp"
reprise::Workflow<std::string> checkout(reprise::WorkflowContext& ctx, Order o) {
  co_return co_await ctx.execute(charge_card, kOptions);  // forgot the order
}
// expect: ctx.execute: the arguments do not match the activity's parameters
// expect: reprise::detail::expects<Order>, reprise::detail::but_was_called_with<>
// expect-gcc: activity_call_mismatch<reprise::detail::function<charge>
// expect-clang: activity_call_mismatch<reprise::detail::function<&charge>
