#include "prelude.hpp"
reprise::Workflow<int64_t> counter(reprise::WorkflowContext& ctx, int64_t n);
inline constexpr reprise::WorkflowDef<&counter> counter_wf{"counter"};
reprise::Workflow<int64_t> counter(reprise::WorkflowContext& ctx, int64_t n) {
  if (n < 10) co_await ctx.continue_as_new(counter_wf, n + 1);
  co_return n;
}
