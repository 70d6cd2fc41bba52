#include "prelude.hpp"
inline constexpr reprise::Signal<Order> amend{"amend"};
reprise::Workflow<int64_t> amender(reprise::WorkflowContext& ctx) {
  const Order amended{"o7", 100};
  co_await ctx.signal_external("order-7", amend, amended);
  co_return 0;
}
