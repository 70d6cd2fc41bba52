#include "engine/queued_task.hpp"

namespace reprise::engine {

internal::QueuedTask queued_task(const TaskRecord& task) {
  internal::QueuedTask out;
  out.set_task_id(task.task_id);
  out.set_kind(static_cast<int32_t>(task.kind));
  out.set_queue(task.queue);
  out.set_namespace_(task.execution.namespace_id);
  out.mutable_execution()->set_workflow_id(task.execution.workflow_id);
  out.mutable_execution()->set_run_id(task.execution.run_id);
  out.set_payload(task.payload);
  return out;
}

Result<TaskRecord> task_record(const internal::QueuedTask& queued) {
  if (queued.kind() != static_cast<int32_t>(TaskKind::kWorkflowTask) &&
      queued.kind() != static_cast<int32_t>(TaskKind::kActivityTask)) {
    return Status::invalid_argument("task kind " + std::to_string(queued.kind()) + " is no worker's");
  }
  return TaskRecord{queued.task_id(),
                    static_cast<TaskKind>(queued.kind()),
                    queued.queue(),
                    {queued.namespace_(), queued.execution().workflow_id(), queued.execution().run_id()},
                    queued.payload()};
}

}  // namespace reprise::engine
