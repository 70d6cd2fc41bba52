// The task a node hands to a queue's owner, and the one the owner asks the
// task's node to start (engine/queued_task.hpp): what crosses comes back
// the same, and a kind no worker takes is refused, naming it.
#include "engine/queued_task.hpp"

#include <gtest/gtest.h>

namespace reprise::engine {
namespace {

TaskRecord an_activity_task() {
  return TaskRecord{42, TaskKind::kActivityTask, "greetings", {"default", "wf-7", "run-7"}, "payload bytes"};
}

TEST(QueuedTask, ATaskComesBackAsItWasSent) {
  for (TaskKind kind : {TaskKind::kWorkflowTask, TaskKind::kActivityTask}) {
    TaskRecord sent = an_activity_task();
    sent.kind = kind;
    internal::QueuedTask wire;
    ASSERT_TRUE(wire.ParseFromString(queued_task(sent).SerializeAsString()));
    Result<TaskRecord> received = task_record(wire);
    ASSERT_TRUE(received) << received.status().to_string();
    EXPECT_EQ(received->task_id, 42);
    EXPECT_EQ(received->kind, kind);
    EXPECT_EQ(received->queue, "greetings");
    EXPECT_EQ(received->execution.namespace_id, "default");
    EXPECT_EQ(received->execution.workflow_id, "wf-7");
    EXPECT_EQ(received->execution.run_id, "run-7");
    EXPECT_EQ(received->payload, "payload bytes");
  }
}

TEST(QueuedTask, AKindNoWorkerTakesIsRefusedNamingIt) {
  for (int32_t kind : {0, static_cast<int32_t>(TaskKind::kTransfer), 99, -1}) {
    internal::QueuedTask wire = queued_task(an_activity_task());
    wire.set_kind(kind);
    Result<TaskRecord> received = task_record(wire);
    ASSERT_FALSE(received) << "kind " << kind;
    EXPECT_EQ(received.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(received.status().message().find("task kind " + std::to_string(kind)), std::string::npos)
        << received.status().to_string();
  }
}

}  // namespace
}  // namespace reprise::engine
