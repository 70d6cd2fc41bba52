#include "prelude.hpp"
reprise::Workflow<int64_t> parent(reprise::WorkflowContext& ctx) {
  co_return co_await ctx.execute_child(square_wf, reprise::ChildWorkflowOptions(), int64_t{3});
}
