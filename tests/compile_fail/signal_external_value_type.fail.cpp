#include "prelude.hpp"
inline constexpr reprise::Signal<Order> amend{"amend"};
reprise::Workflow<int64_t> amender(reprise::WorkflowContext& ctx) {
  co_await ctx.signal_external("order-7", amend, std::string("o7"));
  co_return 0;
}
// expect: ctx.signal_external: the value is not of the Signal<T>'s type T
