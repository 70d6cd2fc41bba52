#include "prelude.hpp"
reprise::Workflow<std::string> checkout(reprise::WorkflowContext& ctx, Order o) {
  co_return co_await ctx.execute_local(charge_card, reprise::LocalActivityOptions::start_to_close(5s), o);
}
