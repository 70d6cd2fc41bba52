#include "prelude.hpp"
std::string ship(reprise::ActivityContext&, Order* order) { return order->id; }
inline constexpr reprise::Activity<&ship> ship_parcel{"ship"};
reprise::Workflow<std::string> send(reprise::WorkflowContext& ctx, Order o) {
  co_return co_await ctx.execute(ship_parcel, kOptions, &o);
}
// expect: activity parameters must be Serializable values taken by value or const&
