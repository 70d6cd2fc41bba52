#include <thread>

#include "prelude.hpp"
reprise::Workflow<void> run(reprise::WorkflowContext&, std::thread t) {
  t.join();
  co_return;
}
inline constexpr reprise::WorkflowDef<&run> run_wf{"run"};
// expect: workflow parameters must be Serializable
