#include "prelude.hpp"
reprise::Workflow<int64_t> counter(reprise::WorkflowContext& ctx, int64_t n);
inline constexpr reprise::WorkflowDef<&counter> counter_wf{"counter"};
reprise::Workflow<int64_t> counter(reprise::WorkflowContext& ctx, int64_t n) {
  if (n < 10) ctx.continue_as_new(counter_wf, n + 1);  // forgot co_await: nothing happens
  co_return n;
}
// expect: nodiscard
