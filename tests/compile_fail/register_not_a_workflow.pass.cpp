#include "prelude.hpp"
reprise::Workflow<int64_t> cube(reprise::WorkflowContext&, int64_t n) { co_return n* n* n; }
inline constexpr reprise::WorkflowDef<&cube> cube_wf{"cube"};
void setup(reprise::Worker& worker) { worker.register_workflow(cube_wf); }
