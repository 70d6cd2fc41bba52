// Retries, as clients in production send them: the same request id again
// after a timeout. A retried signal or signal-with-start is recorded once;
// a retried start finds its run; a new run of a continue-as-new chain does
// not answer for the chain's first start.
#include "server_harness.hpp"

namespace reprise {
namespace {

int signals_in_history(Stub& stub, const std::string& workflow_id) {
  v1::GetHistoryRequest h;
  h.mutable_workflow_execution()->set_workflow_id(workflow_id);
  v1::GetHistoryResponse history;
  EXPECT_TRUE(call(stub, &Stub::GetHistory, h, &history).ok());
  int n = 0;
  for (const auto& e : history.history().events()) n += e.has_workflow_execution_signaled() ? 1 : 0;
  return n;
}

grpc::Status signal(Stub& stub, const std::string& workflow_id, const std::string& request_id) {
  v1::SignalWorkflowRequest r;
  r.mutable_workflow_execution()->set_workflow_id(workflow_id);
  r.set_signal_name("approve");
  r.set_request_id(request_id);
  v1::SignalWorkflowResponse ignored;
  return call(stub, &Stub::SignalWorkflow, r, &ignored);
}

TEST(Idempotency, ASignalRetriedWithItsRequestIdIsRecordedOnce) {
  TempDir dir;
  Server server(dir.file("signals.db"));
  v1::StartWorkflowResponse started;
  ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("wf"), &started).ok());
  ASSERT_TRUE(signal(server.stub(), "wf", "sig-1").ok());
  ASSERT_TRUE(signal(server.stub(), "wf", "sig-1").ok()) << "a retry succeeds";
  EXPECT_EQ(signals_in_history(server.stub(), "wf"), 1);
  ASSERT_TRUE(signal(server.stub(), "wf", "sig-2").ok());
  ASSERT_TRUE(signal(server.stub(), "wf", "").ok());
  ASSERT_TRUE(signal(server.stub(), "wf", "").ok());
  EXPECT_EQ(signals_in_history(server.stub(), "wf"), 4) << "other ids, and no id at all, are separate signals";
}

TEST(Idempotency, ASignalWithStartRetriedIsOneRunAndOneSignal) {
  TempDir dir;
  Server server(dir.file("sws.db"));
  v1::SignalWithStartRequest r;
  *r.mutable_start() = start_request("sws");
  r.set_signal_name("approve");
  v1::StartWorkflowResponse first, retry;
  ASSERT_TRUE(call(server.stub(), &Stub::SignalWithStart, r, &first).ok());
  ASSERT_TRUE(call(server.stub(), &Stub::SignalWithStart, r, &retry).ok());
  EXPECT_TRUE(first.started());
  EXPECT_FALSE(retry.started());
  EXPECT_EQ(retry.run_id(), first.run_id());
  EXPECT_EQ(signals_in_history(server.stub(), "sws"), 1);
}

// A continue-as-new run carries its chain's start request id (as Temporal
// does): a start retried after the chain moved on gets the chain's current
// run, not ALREADY_EXISTS; a start with another request id still conflicts.
TEST(Idempotency, AStartRetriedAfterContinueAsNewFindsTheChainsCurrentRun) {
  TempDir dir;
  Server server(dir.file("can.db"));
  v1::StartWorkflowResponse first, retry;
  ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("chain"), &first).ok());
  ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("chain"), &retry).ok());
  EXPECT_FALSE(retry.started());
  EXPECT_EQ(retry.run_id(), first.run_id());

  auto task = poll_workflow(server.stub());
  v1::Command next;
  next.set_command_type(v1::COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION);
  next.mutable_continue_as_new_workflow_execution()->mutable_workflow_type()->set_name("hello");
  ASSERT_TRUE(complete(server.stub(), task.task_token(), {next}).ok());
  grpc::Status s = call(server.stub(), &Stub::StartWorkflow, start_request("chain"), &retry);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(retry.started());
  EXPECT_NE(retry.run_id(), first.run_id()) << "the chain's current run, the one continue-as-new made";
  v1::StartWorkflowRequest other = start_request("chain");
  other.set_request_id("another-start");
  s = call(server.stub(), &Stub::StartWorkflow, other, &retry);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ALREADY_EXISTS) << s.error_message();
}

}  // namespace
}  // namespace reprise
