// A Connection that passes every call to another: what the SDK tests derive
// from to watch, count or delay the calls they care about, overriding only
// those. complete_activity_answered and fail_activity_answered are left to
// Connection's, which call complete_activity and fail_activity (without the
// eager ask), so a test that watches those sees every activity outcome; a
// test of eager workflow tasks overrides them to call inner_'s.
#pragma once

#include <memory>
#include <utility>

#include "reprise/client.hpp"

namespace reprise {

class ForwardingConnection : public Connection {
 public:
  explicit ForwardingConnection(std::shared_ptr<Connection> inner) : inner_(std::move(inner)) {}

  v1::StartWorkflowResponse start_workflow(const v1::StartWorkflowRequest& r) override {
    return inner_->start_workflow(r);
  }
  void signal_workflow(const v1::SignalWorkflowRequest& r) override { inner_->signal_workflow(r); }
  v1::QueryWorkflowResponse query_workflow(const v1::QueryWorkflowRequest& r) override {
    return inner_->query_workflow(r);
  }
  void request_cancel_workflow(const v1::RequestCancelWorkflowRequest& r) override {
    inner_->request_cancel_workflow(r);
  }
  void terminate_workflow(const v1::TerminateWorkflowRequest& r) override { inner_->terminate_workflow(r); }
  v1::DeleteWorkflowExecutionResponse delete_workflow(const v1::DeleteWorkflowExecutionRequest& r) override {
    return inner_->delete_workflow(r);
  }
  v1::DescribeWorkflowResponse describe_workflow(const v1::DescribeWorkflowRequest& r) override {
    return inner_->describe_workflow(r);
  }
  v1::ListWorkflowsResponse list_workflows(const v1::ListWorkflowsRequest& r) override {
    return inner_->list_workflows(r);
  }
  v1::GetHistoryResponse get_history(const v1::GetHistoryRequest& r, std::chrono::seconds timeout) override {
    return inner_->get_history(r, timeout);
  }
  v1::PollWorkflowTaskResponse poll_workflow_task(const v1::PollWorkflowTaskRequest& r) override {
    return inner_->poll_workflow_task(r);
  }
  v1::CompleteWorkflowTaskResponse complete_workflow_task(const v1::CompleteWorkflowTaskRequest& r) override {
    return inner_->complete_workflow_task(r);
  }
  void fail_workflow_task(const v1::FailWorkflowTaskRequest& r) override { inner_->fail_workflow_task(r); }
  v1::PollActivityTaskResponse poll_activity_task(const v1::PollActivityTaskRequest& r) override {
    return inner_->poll_activity_task(r);
  }
  bool heartbeat_activity(const v1::HeartbeatActivityRequest& r) override { return inner_->heartbeat_activity(r); }
  void complete_activity(const v1::CompleteActivityRequest& r) override { inner_->complete_activity(r); }
  void fail_activity(const v1::FailActivityRequest& r) override { inner_->fail_activity(r); }
  void report_activity_canceled(const v1::ReportActivityCanceledRequest& r) override {
    inner_->report_activity_canceled(r);
  }
  v1::PutPayloadResponse put_payload(std::string_view bytes) override { return inner_->put_payload(bytes); }
  std::string get_payload(const std::string& sha256) override { return inner_->get_payload(sha256); }
  void cancel_polls() override { inner_->cancel_polls(); }

 protected:
  std::shared_ptr<Connection> inner_;
};

}  // namespace reprise
