#include "prelude.hpp"
#include "reprise/stackful.hpp"
// The stackful style has the same checks as the coroutines.
std::string checkout(reprise::StackfulContext& ctx, Order o) {
  return ctx.execute_local(charge_card, reprise::LocalActivityOptions::start_to_close(5s)).get();  // forgot the order
}
inline constexpr reprise::WorkflowDef<&checkout> checkout_wf{"checkout"};
// expect: ctx.execute_local: the arguments do not match the activity's parameters
// expect: reprise::detail::expects<Order>, reprise::detail::but_was_called_with<>
