// The Connection a simulated worker's real code calls (its
// worker::WorkflowTaskRunner and detail::Blobs, and its poll loops): each
// call crosses the simulated Network, with its delays, losses and
// duplicates, and blocks the calling SimFiber until the reply comes or the
// call times out; an error is thrown as RpcError, as a remote connection
// throws it. Calls must be made on a SimFiber.
//
// Thread safety: none; the simulator's thread only.
#pragma once

#include <functional>
#include <string>

#include "network.hpp"
#include "reprise/client.hpp"

namespace reprise::sim {

class SimConnection final : public Connection {
 public:
  // `who` labels the calls in the trace (the worker's identity).
  SimConnection(Network& network, std::string who) : network_(network), who_(std::move(who)) {}

  v1::StartWorkflowResponse start_workflow(const v1::StartWorkflowRequest& r) override;
  void signal_workflow(const v1::SignalWorkflowRequest& r) override;
  v1::QueryWorkflowResponse query_workflow(const v1::QueryWorkflowRequest& r) override;
  void request_cancel_workflow(const v1::RequestCancelWorkflowRequest& r) override;
  void terminate_workflow(const v1::TerminateWorkflowRequest& r) override;
  v1::DescribeWorkflowResponse describe_workflow(const v1::DescribeWorkflowRequest& r) override;
  v1::ListWorkflowsResponse list_workflows(const v1::ListWorkflowsRequest& r) override;
  v1::GetHistoryResponse get_history(const v1::GetHistoryRequest& r, std::chrono::seconds timeout) override;
  v1::PollWorkflowTaskResponse poll_workflow_task(const v1::PollWorkflowTaskRequest& r) override;
  v1::CompleteWorkflowTaskResponse complete_workflow_task(const v1::CompleteWorkflowTaskRequest& r) override;
  void fail_workflow_task(const v1::FailWorkflowTaskRequest& r) override;
  v1::PollActivityTaskResponse poll_activity_task(const v1::PollActivityTaskRequest& r) override;
  bool heartbeat_activity(const v1::HeartbeatActivityRequest& r) override;
  void complete_activity(const v1::CompleteActivityRequest& r) override;
  void fail_activity(const v1::FailActivityRequest& r) override;
  void report_activity_canceled(const v1::ReportActivityCanceledRequest& r) override;
  v1::CompleteActivityResponse complete_activity_answered(const v1::CompleteActivityRequest& r) override;
  v1::FailActivityResponse fail_activity_answered(const v1::FailActivityRequest& r) override;
  // The simulated engine's blob store is not on the network: the generated
  // payloads are far below the upload threshold, so these throw UNIMPLEMENTED.
  v1::PutPayloadResponse put_payload(std::string_view bytes) override;
  std::string get_payload(const std::string& sha256) override;

  // Sees each workflow task completion before it is sent (null: none does).
  std::function<void(const v1::CompleteWorkflowTaskRequest&)> on_complete_workflow_task;
  // Called when a request that asks the engine to hand out a task in its
  // answer (an eager activity or an eager workflow task) reaches the
  // engine, just before the engine takes it (null: none is told).
  std::function<void()> on_eager_request_delivered;

 private:
  template <typename Resp>
  Resp call(const std::string& what, Network::Invoke<Resp> invoke, Duration timeout);

  Network& network_;
  std::string who_;
};

}  // namespace reprise::sim
