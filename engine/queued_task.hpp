// A worker task as it crosses between the nodes of a cluster
// (internal::QueuedTask, docs/cluster.md "Task queues"): a node hands its
// pending tasks to their queue's owner, and the owner asks the task's node
// to start the one it matched. Both directions of the conversion live here.
#pragma once

#include "engine/store/records.hpp"
#include "history/status.hpp"
#include "reprise/internal/cluster.pb.h"

namespace reprise::engine {

// The wire form of `task`.
internal::QueuedTask queued_task(const TaskRecord& task);

// The task `queued` names; INVALID_ARGUMENT naming the kind when it is not
// a worker's (a workflow or an activity task): no other kind crosses.
Result<TaskRecord> task_record(const internal::QueuedTask& queued);

}  // namespace reprise::engine
