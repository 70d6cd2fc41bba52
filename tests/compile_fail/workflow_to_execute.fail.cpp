#include "prelude.hpp"
reprise::Workflow<int64_t> parent(reprise::WorkflowContext& ctx) {
  ctx.execute(square_wf, kOptions, int64_t{3});
  co_return 0;
}
// expect: ctx.execute runs activities; to run a workflow from a workflow, use ctx.execute_child
