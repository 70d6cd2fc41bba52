#include "prelude.hpp"
reprise::Workflow<std::string> checkout(reprise::WorkflowContext& ctx, Order o) {
  ctx.execute(charge_card, kOptions, o);  // scheduled, never awaited
  co_return "done";
}
// expect: nodiscard
