#include "sim_connection.hpp"

#include <memory>
#include <optional>
#include <stdexcept>

#include "reprise/errors.hpp"
#include "sim_fiber.hpp"

namespace reprise::sim {

namespace {

using engine::Engine;
using engine::Reply;

// A unary call's deadline; a poll waits longer than the engine's 5 s poll timeout.
constexpr Duration kCallTimeout = std::chrono::seconds(5);
constexpr Duration kPollTimeout = std::chrono::seconds(8);

}  // namespace

template <typename Resp>
Resp SimConnection::call(const std::string& what, Network::Invoke<Resp> invoke, Duration timeout) {
  SimFiber* fiber = SimFiber::current();
  if (fiber == nullptr) throw std::logic_error("SimConnection::" + what + " called off a SimFiber");
  auto answer = std::make_shared<std::optional<Result<Resp>>>();
  network_.call<Resp>(what + " " + who_, std::move(invoke), timeout,
                      [answer, resume = fiber->resumer()](Result<Resp> r) {
                        *answer = std::move(r);
                        resume();
                      });
  while (!answer->has_value()) fiber->block();
  Result<Resp>& r = **answer;
  if (!r) throw RpcError(static_cast<int>(r.status().code()), what + ": " + r.status().message());
  return std::move(r).value();
}

v1::StartWorkflowResponse SimConnection::start_workflow(const v1::StartWorkflowRequest& r) {
  return call<v1::StartWorkflowResponse>(
      "StartWorkflow", [r](Engine& e, Reply<v1::StartWorkflowResponse> reply) { e.start_workflow(r, reply); },
      kCallTimeout);
}

void SimConnection::signal_workflow(const v1::SignalWorkflowRequest& r) {
  call<v1::SignalWorkflowResponse>(
      "SignalWorkflow", [r](Engine& e, Reply<v1::SignalWorkflowResponse> reply) { e.signal_workflow(r, reply); },
      kCallTimeout);
}

v1::QueryWorkflowResponse SimConnection::query_workflow(const v1::QueryWorkflowRequest& r) {
  return call<v1::QueryWorkflowResponse>(
      "QueryWorkflow", [r](Engine& e, Reply<v1::QueryWorkflowResponse> reply) { e.query_workflow(r, reply); },
      kCallTimeout);
}

void SimConnection::request_cancel_workflow(const v1::RequestCancelWorkflowRequest& r) {
  call<v1::RequestCancelWorkflowResponse>(
      "RequestCancelWorkflow",
      [r](Engine& e, Reply<v1::RequestCancelWorkflowResponse> reply) { e.request_cancel_workflow(r, reply); },
      kCallTimeout);
}

void SimConnection::terminate_workflow(const v1::TerminateWorkflowRequest& r) {
  call<v1::TerminateWorkflowResponse>(
      "TerminateWorkflow",
      [r](Engine& e, Reply<v1::TerminateWorkflowResponse> reply) { e.terminate_workflow(r, reply); }, kCallTimeout);
}

v1::DescribeWorkflowResponse SimConnection::describe_workflow(const v1::DescribeWorkflowRequest& r) {
  return call<v1::DescribeWorkflowResponse>(
      "DescribeWorkflow", [r](Engine& e, Reply<v1::DescribeWorkflowResponse> reply) { e.describe_workflow(r, reply); },
      kCallTimeout);
}

v1::ListWorkflowsResponse SimConnection::list_workflows(const v1::ListWorkflowsRequest& r) {
  return call<v1::ListWorkflowsResponse>(
      "ListWorkflows", [r](Engine& e, Reply<v1::ListWorkflowsResponse> reply) { e.list_workflows(r, reply); },
      kCallTimeout);
}

v1::GetHistoryResponse SimConnection::get_history(const v1::GetHistoryRequest& r, std::chrono::seconds timeout) {
  return call<v1::GetHistoryResponse>(
      "GetHistory", [r](Engine& e, Reply<v1::GetHistoryResponse> reply) { e.get_history(r, reply); },
      std::min<Duration>(timeout, kCallTimeout));
}

v1::PollWorkflowTaskResponse SimConnection::poll_workflow_task(const v1::PollWorkflowTaskRequest& r) {
  return call<v1::PollWorkflowTaskResponse>(
      "PollWorkflowTask", [r](Engine& e, Reply<v1::PollWorkflowTaskResponse> reply) { e.poll_workflow_task(r, reply); },
      kPollTimeout);
}

v1::CompleteWorkflowTaskResponse SimConnection::complete_workflow_task(const v1::CompleteWorkflowTaskRequest& r) {
  if (on_complete_workflow_task) on_complete_workflow_task(r);
  bool eager = false;
  for (const v1::Command& c : r.commands())
    eager = eager || (c.has_schedule_activity_task() && c.schedule_activity_task().request_eager_execution());
  return call<v1::CompleteWorkflowTaskResponse>(
      "CompleteWorkflowTask",
      [r, told = eager ? on_eager_request_delivered : nullptr](Engine& e,
                                                               Reply<v1::CompleteWorkflowTaskResponse> reply) {
        if (told) told();
        e.complete_workflow_task(r, reply);
      },
      kCallTimeout);
}

void SimConnection::fail_workflow_task(const v1::FailWorkflowTaskRequest& r) {
  call<v1::FailWorkflowTaskResponse>(
      "FailWorkflowTask", [r](Engine& e, Reply<v1::FailWorkflowTaskResponse> reply) { e.fail_workflow_task(r, reply); },
      kCallTimeout);
}

v1::PollActivityTaskResponse SimConnection::poll_activity_task(const v1::PollActivityTaskRequest& r) {
  return call<v1::PollActivityTaskResponse>(
      "PollActivityTask", [r](Engine& e, Reply<v1::PollActivityTaskResponse> reply) { e.poll_activity_task(r, reply); },
      kPollTimeout);
}

bool SimConnection::heartbeat_activity(const v1::HeartbeatActivityRequest& r) {
  return call<v1::HeartbeatActivityResponse>(
             "HeartbeatActivity",
             [r](Engine& e, Reply<v1::HeartbeatActivityResponse> reply) { e.heartbeat_activity(r, reply); },
             kCallTimeout)
      .cancel_requested();
}

void SimConnection::complete_activity(const v1::CompleteActivityRequest& r) {
  v1::CompleteActivityRequest without_ask = r;
  without_ask.clear_eager_workflow_task_queue();  // nothing would run a task handed out here
  complete_activity_answered(without_ask);
}

void SimConnection::fail_activity(const v1::FailActivityRequest& r) {
  v1::FailActivityRequest without_ask = r;
  without_ask.clear_eager_workflow_task_queue();
  fail_activity_answered(without_ask);
}

v1::CompleteActivityResponse SimConnection::complete_activity_answered(const v1::CompleteActivityRequest& r) {
  return call<v1::CompleteActivityResponse>(
      "CompleteActivity",
      [r, told = r.eager_workflow_task_queue().empty() ? nullptr : on_eager_request_delivered](
          Engine& e, Reply<v1::CompleteActivityResponse> reply) {
        if (told) told();
        e.complete_activity(r, reply);
      },
      kCallTimeout);
}

v1::FailActivityResponse SimConnection::fail_activity_answered(const v1::FailActivityRequest& r) {
  return call<v1::FailActivityResponse>(
      "FailActivity",
      [r, told = r.eager_workflow_task_queue().empty() ? nullptr : on_eager_request_delivered](
          Engine& e, Reply<v1::FailActivityResponse> reply) {
        if (told) told();
        e.fail_activity(r, reply);
      },
      kCallTimeout);
}

void SimConnection::report_activity_canceled(const v1::ReportActivityCanceledRequest& r) {
  call<v1::ReportActivityCanceledResponse>(
      "ReportActivityCanceled",
      [r](Engine& e, Reply<v1::ReportActivityCanceledResponse> reply) { e.report_activity_canceled(r, reply); },
      kCallTimeout);
}

v1::PutPayloadResponse SimConnection::put_payload(std::string_view) {
  throw RpcError(static_cast<int>(StatusCode::kUnimplemented), "PutPayload: the simulator has no blob store");
}

std::string SimConnection::get_payload(const std::string&) {
  throw RpcError(static_cast<int>(StatusCode::kUnimplemented), "GetPayload: the simulator has no blob store");
}

}  // namespace reprise::sim
