#include "prelude.hpp"
reprise::Workflow<std::string> checkout(reprise::WorkflowContext& ctx, Order o) {
  co_return co_await ctx.execute_local(charge_card, reprise::LocalActivityOptions::start_to_close(5s),
                                       o.cents);  // an int64_t, not an Order
}
// expect: ctx.execute_local: the arguments do not match the activity's parameters
// expect-gcc: but_was_called_with<long int>
// expect-clang: but_was_called_with<long>
