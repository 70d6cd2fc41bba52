#include "prelude.hpp"
reprise::Workflow<int64_t> parent(reprise::WorkflowContext& ctx) {
  co_return co_await ctx.execute_child(square_wf, reprise::ChildWorkflowOptions(), std::string("3"));
}
// expect: ctx.execute_child: the arguments do not match the child workflow's parameters
// expect: child_workflow_call_mismatch<
