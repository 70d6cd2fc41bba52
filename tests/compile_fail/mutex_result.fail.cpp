#include <mutex>

#include "prelude.hpp"
reprise::Workflow<std::mutex*> lock_it(reprise::WorkflowContext&, int64_t) { co_return nullptr; }
inline constexpr reprise::WorkflowDef<&lock_it> lock_wf{"lock"};
// expect: a workflow's result must be Serializable or void
