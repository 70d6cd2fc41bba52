// A workflow signals or asks to cancel another workflow, through a real
// server: the target records the request once, and the sender's history
// records what became of it.
#include "server_harness.hpp"

namespace reprise {
namespace {

v1::Command signal_external(const std::string& workflow_id, bool child_only = false) {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION);
  auto* a = c.mutable_signal_external_workflow_execution();
  a->mutable_execution()->set_workflow_id(workflow_id);
  a->set_signal_name("ping");
  a->mutable_input()->add_payloads()->set_data("from the sender");
  a->set_child_workflow_only(child_only);
  return c;
}

v1::Command cancel_external(const std::string& workflow_id) {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION);
  c.mutable_request_cancel_external_workflow_execution()->mutable_execution()->set_workflow_id(workflow_id);
  c.mutable_request_cancel_external_workflow_execution()->set_reason("the sender said so");
  return c;
}

// The outcome of the sender's request, from the sender's next task (tasks of
// other workflows, such as the target woken by a signal, are completed on
// the way).
v1::HistoryEvent outcome_seen_by(Stub& stub, const std::string& sender) {
  for (int tasks = 0; tasks < 5; ++tasks) {
    auto task = next_workflow_task(stub);
    EXPECT_TRUE(complete(stub, task.task_token(), {}).ok());
    if (task.workflow_execution().workflow_id() != sender) continue;
    for (const auto& e : task.history().events()) {
      if (e.has_external_workflow_execution_signaled() || e.has_signal_external_workflow_execution_failed() ||
          e.has_external_workflow_execution_cancel_requested() ||
          e.has_request_cancel_external_workflow_execution_failed()) {
        if (e.event_id() > task.previous_started_event_id()) return e;
      }
    }
  }
  ADD_FAILURE() << "no new outcome in the sender's history";
  return {};
}

class ExternalRequests : public ::testing::Test {
 protected:
  void SetUp() override {
    v1::StartWorkflowResponse started;
    for (const char* id : {"target", "sender"}) {
      ASSERT_TRUE(call(server_.stub(), &Stub::StartWorkflow, start_request(id), &started).ok());
      auto task = next_workflow_task(server_.stub());
      ASSERT_TRUE(complete(server_.stub(), task.task_token(), {}).ok());
    }
  }
  // The sender's task that sends `command`, and the initiated event's id.
  int64_t send(v1::Command command) {
    EXPECT_TRUE(poke(server_.stub(), "sender").ok());
    auto task = next_workflow_task(server_.stub());
    EXPECT_EQ(task.workflow_execution().workflow_id(), "sender");
    grpc::Status s = complete(server_.stub(), task.task_token(), {std::move(command)});
    EXPECT_TRUE(s.ok()) << s.error_message();
    return task.history().events().rbegin()->event_id() + 2;  // after WorkflowTaskCompleted
  }

  TempDir dir_;
  Server server_{dir_.file("external.db")};
};

TEST_F(ExternalRequests, ASignalReachesItsTargetOnceAndTheSenderHearsSo) {
  const int64_t initiated = send(signal_external("target"));
  auto outcome = outcome_seen_by(server_.stub(), "sender");
  ASSERT_TRUE(outcome.has_external_workflow_execution_signaled()) << outcome.DebugString();
  EXPECT_EQ(outcome.external_workflow_execution_signaled().initiated_event_id(), initiated);

  auto target = history_of(server_.stub(), "target");
  ASSERT_EQ(count_events(target, v1::EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED), 1);
  for (const auto& e : target.history().events()) {
    if (!e.has_workflow_execution_signaled()) continue;
    EXPECT_EQ(e.workflow_execution_signaled().signal_name(), "ping");
    EXPECT_EQ(e.workflow_execution_signaled().input().payloads(0).data(), "from the sender");
    EXPECT_EQ(e.workflow_execution_signaled().identity(), "sender");
  }
}

TEST_F(ExternalRequests, ACancelRequestReachesItsTarget) {
  send(cancel_external("target"));
  auto outcome = outcome_seen_by(server_.stub(), "sender");
  EXPECT_TRUE(outcome.has_external_workflow_execution_cancel_requested()) << outcome.DebugString();
  EXPECT_EQ(count_events(history_of(server_.stub(), "target"), v1::EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED), 1);
}

TEST_F(ExternalRequests, ARequestForAWorkflowThatIsNotThereOrNotAChildFails) {
  send(signal_external("nobody"));
  auto outcome = outcome_seen_by(server_.stub(), "sender");
  ASSERT_TRUE(outcome.has_signal_external_workflow_execution_failed()) << outcome.DebugString();
  EXPECT_EQ(outcome.signal_external_workflow_execution_failed().cause(), v1::EXTERNAL_FAILURE_CAUSE_NOT_FOUND);

  send(cancel_external("nobody"));
  outcome = outcome_seen_by(server_.stub(), "sender");
  ASSERT_TRUE(outcome.has_request_cancel_external_workflow_execution_failed()) << outcome.DebugString();

  send(signal_external("target", /*child_only=*/true));
  outcome = outcome_seen_by(server_.stub(), "sender");
  ASSERT_TRUE(outcome.has_signal_external_workflow_execution_failed()) << outcome.DebugString();
  EXPECT_EQ(outcome.signal_external_workflow_execution_failed().cause(), v1::EXTERNAL_FAILURE_CAUSE_NOT_CHILD);
  EXPECT_EQ(count_events(history_of(server_.stub(), "target"), v1::EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED), 0);
}

}  // namespace
}  // namespace reprise
