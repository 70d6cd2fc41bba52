// ScriptedConnection: a Connection with no engine behind it, for testing
// the Worker's handling of one task at a time. The test queues workflow
// tasks; workflow polls hand them out (or come back empty after a moment),
// and the worker's answers are recorded for the test to wait on. History
// fetches go to a function the test sets.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "history/status.hpp"
#include "reprise/client.hpp"

namespace reprise {

class ScriptedConnection final : public Connection {
 public:
  // One answer to a workflow task: a completion or a failure.
  struct Answer {
    std::optional<v1::CompleteWorkflowTaskRequest> completed;
    std::optional<v1::FailWorkflowTaskRequest> failed;
  };

  void queue_task(v1::PollWorkflowTaskResponse task) {
    std::lock_guard lock(mu_);
    tasks_.push_back(std::move(task));
    cv_.notify_all();
  }
  // Waits up to `timeout` for the next answer.
  std::optional<Answer> next_answer(std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return !answers_.empty(); })) return std::nullopt;
    Answer a = std::move(answers_.front());
    answers_.pop_front();
    return a;
  }
  std::function<v1::GetHistoryResponse(const v1::GetHistoryRequest&)> history;

  v1::PollWorkflowTaskResponse poll_workflow_task(const v1::PollWorkflowTaskRequest&) override {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::milliseconds(20), [&] { return !tasks_.empty(); })) return {};
    v1::PollWorkflowTaskResponse task = std::move(tasks_.front());
    tasks_.pop_front();
    return task;
  }
  v1::CompleteWorkflowTaskResponse complete_workflow_task(const v1::CompleteWorkflowTaskRequest& r) override {
    answer({r, std::nullopt});
    return {};
  }
  void fail_workflow_task(const v1::FailWorkflowTaskRequest& r) override { answer({std::nullopt, r}); }
  v1::GetHistoryResponse get_history(const v1::GetHistoryRequest& r, std::chrono::seconds) override {
    if (!history) throw RpcError(static_cast<int>(StatusCode::kUnimplemented), "GetHistory: not scripted");
    return history(r);
  }
  v1::PollActivityTaskResponse poll_activity_task(const v1::PollActivityTaskRequest&) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return {};
  }

  // Not used by the worker's workflow side.
  v1::StartWorkflowResponse start_workflow(const v1::StartWorkflowRequest&) override { unscripted(); }
  void signal_workflow(const v1::SignalWorkflowRequest&) override { unscripted(); }
  v1::QueryWorkflowResponse query_workflow(const v1::QueryWorkflowRequest&) override { unscripted(); }
  void request_cancel_workflow(const v1::RequestCancelWorkflowRequest&) override { unscripted(); }
  void terminate_workflow(const v1::TerminateWorkflowRequest&) override { unscripted(); }
  v1::DescribeWorkflowResponse describe_workflow(const v1::DescribeWorkflowRequest&) override { unscripted(); }
  v1::ListWorkflowsResponse list_workflows(const v1::ListWorkflowsRequest&) override { unscripted(); }
  bool heartbeat_activity(const v1::HeartbeatActivityRequest&) override { unscripted(); }
  void complete_activity(const v1::CompleteActivityRequest&) override { unscripted(); }
  void fail_activity(const v1::FailActivityRequest&) override { unscripted(); }
  void report_activity_canceled(const v1::ReportActivityCanceledRequest&) override { unscripted(); }
  v1::PutPayloadResponse put_payload(std::string_view) override { unscripted(); }
  std::string get_payload(const std::string&) override { unscripted(); }

 private:
  [[noreturn]] static void unscripted() {
    throw RpcError(static_cast<int>(StatusCode::kUnimplemented), "not scripted");
  }
  void answer(Answer a) {
    std::lock_guard lock(mu_);
    answers_.push_back(std::move(a));
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::PollWorkflowTaskResponse> tasks_;
  std::deque<Answer> answers_;
};

}  // namespace reprise
