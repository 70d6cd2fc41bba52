#include "prelude.hpp"
reprise::Workflow<int64_t> cube(int64_t n) { co_return n* n* n; }  // no WorkflowContext&
inline constexpr reprise::WorkflowDef<&cube> cube_wf{"cube"};
void setup(reprise::Worker& worker) { worker.register_workflow(cube_wf); }
// expect: a workflow is a function `reprise::Workflow<R> f(reprise::WorkflowContext&, Args...)`
