#include <mutex>

#include "prelude.hpp"
reprise::Workflow<bool> lock_it(reprise::WorkflowContext&, int64_t) { co_return true; }
inline constexpr reprise::WorkflowDef<&lock_it> lock_wf{"lock"};
