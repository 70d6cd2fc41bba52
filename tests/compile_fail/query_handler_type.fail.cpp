#include "prelude.hpp"
inline constexpr reprise::Query<int64_t> cents{"cents"};
reprise::Workflow<int64_t> track(reprise::WorkflowContext& ctx, Order o) {
  ctx.on_query(cents, [&o] { return o.id; });  // a string for a Query<int64_t>
  co_return o.cents;
}
// expect: the query handler must return the Query<T>'s type T
