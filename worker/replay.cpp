// reprise::testing::replay: see reprise/detail/replay.hpp.
#include "reprise/detail/replay.hpp"

#include "reprise/errors.hpp"
#include "worker/workflow_instance.hpp"

namespace reprise::testing::detail {

void replay_history(const v1::History& history, const std::string& workflow_type, worker::WorkflowStarter starter) {
  if (history.events_size() == 0 || !history.events(0).has_workflow_execution_started()) {
    throw Error("a history to replay must start with WorkflowExecutionStarted");
  }
  const std::string& recorded_type = history.events(0).workflow_execution_started().workflow_type().name();
  if (!recorded_type.empty() && recorded_type != workflow_type) {
    throw Error("the history is of workflow '" + recorded_type + "', not '" + workflow_type + "'");
  }
  worker::WorkflowInstance instance(workflow_type, std::move(starter));
  instance.set_execution("replay", history.events(0).workflow_execution_started().original_execution_run_id());
  worker::ApplyResult replayed = instance.apply(history);
  if (replayed) return;
  if (replayed.nondeterministic()) {
    throw NonDeterminismError(replayed.status().message());
  }
  throw Error("replaying workflow '" + workflow_type + "' failed: " + replayed.status().message());
}

}  // namespace reprise::testing::detail
