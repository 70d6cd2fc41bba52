#include "prelude.hpp"
reprise::Workflow<int64_t> parent(reprise::WorkflowContext& ctx) {
  co_return co_await ctx.execute_local(square_wf, reprise::LocalActivityOptions::start_to_close(5s), int64_t{3});
}
// expect: ctx.execute_local runs activities; to run a workflow from a workflow, use ctx.execute_child
