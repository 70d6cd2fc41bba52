#include "prelude.hpp"
#include "reprise/stackful.hpp"
// The stackful style has the same checks as the coroutines.
std::string checkout(reprise::StackfulContext& ctx, Order o) {
  return ctx.execute_local(charge_card, reprise::LocalActivityOptions::start_to_close(5s), o).get();
}
inline constexpr reprise::WorkflowDef<&checkout> checkout_wf{"checkout"};
