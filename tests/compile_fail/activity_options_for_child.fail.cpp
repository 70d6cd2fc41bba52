#include "prelude.hpp"
reprise::Workflow<int64_t> parent(reprise::WorkflowContext& ctx) {
  co_return co_await ctx.execute_child(square_wf, kOptions, int64_t{3});
}
// expect: ctx.execute_child takes reprise::ChildWorkflowOptions, not ActivityOptions
