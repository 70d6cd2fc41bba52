#include "prelude.hpp"
inline constexpr reprise::Query<int64_t> cents{"cents"};
reprise::Workflow<int64_t> track(reprise::WorkflowContext& ctx, Order o) {
  ctx.on_query(cents, [&o] { return o.cents; });
  co_return o.cents;
}
