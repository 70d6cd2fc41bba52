// reprise-server as a real process on loopback with a real SQLite file, and
// the raw gRPC calls the server tests drive it with.
#pragma once

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>

#include "../store/child_process.hpp"
#include "../store/store_test_util.hpp"
#include "reprise/v1/service.grpc.pb.h"

namespace reprise {

using engine::testing::ChildProcess;
using engine::testing::loopback_address_after;
using engine::testing::TempDir;

class Server {
 public:
  // With `stderr_log`, the server's log (its stderr) is appended to that file.
  explicit Server(const std::string& db, std::vector<std::string> extra_flags = {},
                  const std::string& stderr_log = "") {
    const char* binary = std::getenv("REPRISE_SERVER");
    EXPECT_NE(binary, nullptr) << "REPRISE_SERVER is not set";
    std::vector<std::string> args{binary, "--db",        db,    "--listen", "127.0.0.1:0", "--poll-timeout-ms",
                                  "500",  "--log-level", "warn"};
    args.insert(args.end(), extra_flags.begin(), extra_flags.end());
    process_ = std::make_unique<ChildProcess>(args, stderr_log);
    std::string line;
    EXPECT_TRUE(process_->read_line(line));
    address_ = loopback_address_after(line, "listening on");
    EXPECT_FALSE(address_.empty()) << line;
    metrics_address_ = loopback_address_after(line, "metrics on");
    ui_address_ = loopback_address_after(line, "ui on");
    auto channel = grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
    stub_ = v1::WorkflowService::NewStub(channel);
  }
  void kill9() {
    process_->kill(SIGKILL);
    process_->wait();
  }
  int terminate() {
    process_->kill(SIGTERM);
    std::string line;
    while (process_->read_line(line)) last_line_ = line;
    return process_->wait();
  }
  // Sends `sig` and returns at once (a watchdog's SIGKILL, say).
  void signal(int sig) { process_->kill(sig); }
  pid_t pid() const { return process_->pid(); }
  v1::WorkflowService::Stub& stub() { return *stub_; }
  const std::string& address() const { return address_; }
  // With --metrics-listen: where /metrics is served.
  const std::string& metrics_address() const { return metrics_address_; }
  // With --ui-listen: where the web UI is served.
  const std::string& ui_address() const { return ui_address_; }
  const std::string& last_line() const { return last_line_; }

 private:
  std::unique_ptr<ChildProcess> process_;
  std::string address_;
  std::string metrics_address_;
  std::string ui_address_;
  std::string last_line_;
  std::unique_ptr<v1::WorkflowService::Stub> stub_;
};

// A loopback port nothing listens on now (the kernel's pick, released): for
// an address that refuses connections, or a server restarted on one port.
inline int unused_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// Calls one unary RPC with a deadline.
template <typename Req, typename Resp>
inline grpc::Status call(v1::WorkflowService::Stub& stub,
                         grpc::Status (v1::WorkflowService::Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                         const Req& request, Resp* response) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return (stub.*method)(&context, request, response);
}

using Stub = v1::WorkflowService::Stub;

inline v1::StartWorkflowRequest start_request(const std::string& id) {
  v1::StartWorkflowRequest r;
  r.set_workflow_id(id);
  r.mutable_workflow_type()->set_name("hello");
  r.mutable_task_queue()->set_name("q");
  r.set_request_id("start-" + id);
  return r;
}

inline v1::Command schedule(const std::string& id) {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK);
  c.mutable_schedule_activity_task()->set_activity_id(id);
  c.mutable_schedule_activity_task()->mutable_activity_type()->set_name("greet");
  c.mutable_schedule_activity_task()->mutable_start_to_close_timeout()->set_seconds(30);
  return c;
}

inline v1::Command finish(const std::string& result) {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION);
  c.mutable_complete_workflow_execution()->mutable_result()->add_payloads()->set_data(result);
  return c;
}

inline v1::PollWorkflowTaskResponse poll_workflow(Stub& stub) {
  v1::PollWorkflowTaskRequest r;
  r.mutable_task_queue()->set_name("q");
  v1::PollWorkflowTaskResponse out;
  EXPECT_TRUE(call(stub, &Stub::PollWorkflowTask, r, &out).ok());
  return out;
}

inline grpc::Status complete(Stub& stub, const std::string& token, std::vector<v1::Command> commands) {
  v1::CompleteWorkflowTaskRequest r;
  r.set_task_token(token);
  for (auto& c : commands) *r.add_commands() = c;
  v1::CompleteWorkflowTaskResponse out;
  return call(stub, &Stub::CompleteWorkflowTask, r, &out);
}

// Polls until a task comes (each poll waits up to the server's 500 ms).
inline v1::PollWorkflowTaskResponse next_workflow_task(Stub& stub) {
  for (int i = 0; i < 20; ++i) {
    auto task = poll_workflow(stub);
    if (!task.task_token().empty()) return task;
  }
  ADD_FAILURE() << "no workflow task came";
  return {};
}

inline v1::PollActivityTaskResponse next_activity_task(Stub& stub) {
  for (int i = 0; i < 20; ++i) {
    v1::PollActivityTaskRequest r;
    r.mutable_task_queue()->set_name("q");
    v1::PollActivityTaskResponse out;
    EXPECT_TRUE(call(stub, &Stub::PollActivityTask, r, &out).ok());
    if (!out.task_token().empty()) return out;
  }
  ADD_FAILURE() << "no activity task came";
  return {};
}

inline v1::GetHistoryResponse history_of(Stub& stub, const std::string& workflow_id) {
  v1::GetHistoryRequest h;
  h.mutable_workflow_execution()->set_workflow_id(workflow_id);
  v1::GetHistoryResponse out;
  EXPECT_TRUE(call(stub, &Stub::GetHistory, h, &out).ok());
  return out;
}

inline v1::DescribeWorkflowResponse describe(Stub& stub, const std::string& id, grpc::Status* status = nullptr) {
  v1::DescribeWorkflowRequest r;
  r.mutable_workflow_execution()->set_workflow_id(id);
  v1::DescribeWorkflowResponse out;
  grpc::Status s = call(stub, &Stub::DescribeWorkflow, r, &out);
  if (status != nullptr) *status = s;
  return out;
}

inline int count_events(const v1::GetHistoryResponse& history, v1::EventType type) {
  int n = 0;
  for (const auto& e : history.history().events()) n += e.event_type() == type ? 1 : 0;
  return n;
}

// A signal named "poke": something for the workflow to wake up to.
inline grpc::Status poke(Stub& stub, const std::string& workflow_id) {
  v1::SignalWorkflowRequest r;
  r.mutable_workflow_execution()->set_workflow_id(workflow_id);
  r.set_signal_name("poke");
  v1::SignalWorkflowResponse ignored;
  return call(stub, &Stub::SignalWorkflow, r, &ignored);
}

}  // namespace reprise
