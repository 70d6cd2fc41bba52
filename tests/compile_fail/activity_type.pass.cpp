#include "prelude.hpp"
reprise::Workflow<std::string> checkout(reprise::WorkflowContext& ctx, Order o) {
  co_return co_await ctx.execute(charge_card, kOptions, o);
}
