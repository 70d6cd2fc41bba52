#include <thread>

#include "prelude.hpp"
reprise::Workflow<void> run(reprise::WorkflowContext&, int64_t job) {
  (void)job;
  co_return;
}
inline constexpr reprise::WorkflowDef<&run> run_wf{"run"};
