// Connection::remote: the WorkflowService over a gRPC channel.
#include <grpcpp/grpcpp.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <type_traits>
#include <vector>

#include "history/run_chain.hpp"
#include "history/status.hpp"
#include "reprise/client.hpp"
#include "reprise/detail/uuid.hpp"
#include "reprise/v1/service.grpc.pb.h"
#include "sdk/src/address_list.hpp"
#include "sdk/src/busy_backoff.hpp"
#include "sdk/src/server_targets.hpp"

namespace reprise {

namespace {

using Stub = v1::WorkflowService::Stub;

class RemoteConnection final : public Connection {
 public:
  RemoteConnection(const std::vector<std::string>& addresses,
                   const std::shared_ptr<grpc::ChannelCredentials>& credentials, const std::string& server_name,
                   const ConnectionOptions& options)
      : authorization_(options.api_key.empty() ? "" : "Bearer " + options.api_key),
        namespace_(options.namespace_name),
        targets_(addresses, credentials, channel_arguments(server_name, addresses.size() > 1, options)) {}

  v1::StartWorkflowResponse start_workflow(const v1::StartWorkflowRequest& r) override {
    // A start that waits for the result is given its wait on top.
    const auto wait =
        r.wait_for_result() ? std::chrono::seconds(r.wait_timeout().seconds() + 1) : std::chrono::seconds(0);
    return call("StartWorkflow", &Stub::StartWorkflow, r, std::chrono::seconds(30) + wait);
  }
  void signal_workflow(const v1::SignalWorkflowRequest& r) override {
    call("SignalWorkflow", &Stub::SignalWorkflow, r, std::chrono::seconds(30));
  }
  v1::QueryWorkflowResponse query_workflow(const v1::QueryWorkflowRequest& r) override {
    return call("QueryWorkflow", &Stub::QueryWorkflow, r, std::chrono::seconds(30));
  }
  void request_cancel_workflow(const v1::RequestCancelWorkflowRequest& r) override {
    call("RequestCancelWorkflow", &Stub::RequestCancelWorkflow, r, std::chrono::seconds(30));
  }
  void terminate_workflow(const v1::TerminateWorkflowRequest& r) override {
    call("TerminateWorkflow", &Stub::TerminateWorkflow, r, std::chrono::seconds(30));
  }
  v1::DeleteWorkflowExecutionResponse delete_workflow(const v1::DeleteWorkflowExecutionRequest& r) override {
    return call("DeleteWorkflowExecution", &Stub::DeleteWorkflowExecution, r, std::chrono::seconds(30));
  }
  v1::RegisterNamespaceResponse register_namespace(const v1::RegisterNamespaceRequest& r) override {
    return call("RegisterNamespace", &Stub::RegisterNamespace, r, std::chrono::seconds(30));
  }
  v1::DescribeNamespaceResponse describe_namespace(const v1::DescribeNamespaceRequest& r) override {
    return call("DescribeNamespace", &Stub::DescribeNamespace, r, std::chrono::seconds(30));
  }
  v1::ListNamespacesResponse list_namespaces(const v1::ListNamespacesRequest& r) override {
    return call("ListNamespaces", &Stub::ListNamespaces, r, std::chrono::seconds(30));
  }
  v1::UpdateNamespaceResponse update_namespace(const v1::UpdateNamespaceRequest& r) override {
    return call("UpdateNamespace", &Stub::UpdateNamespace, r, std::chrono::seconds(30));
  }
  v1::DescribeWorkflowResponse describe_workflow(const v1::DescribeWorkflowRequest& r) override {
    return call("DescribeWorkflow", &Stub::DescribeWorkflow, r, std::chrono::seconds(30));
  }
  v1::ListWorkflowsResponse list_workflows(const v1::ListWorkflowsRequest& r) override {
    return call("ListWorkflows", &Stub::ListWorkflows, r, std::chrono::seconds(30));
  }
  v1::GetHistoryResponse get_history(const v1::GetHistoryRequest& r, std::chrono::seconds timeout) override {
    return call("GetHistory", &Stub::GetHistory, r, timeout);
  }
  v1::PollWorkflowTaskResponse poll_workflow_task(const v1::PollWorkflowTaskRequest& r) override {
    return poll("PollWorkflowTask", &Stub::PollWorkflowTask, r);
  }
  v1::CompleteWorkflowTaskResponse complete_workflow_task(const v1::CompleteWorkflowTaskRequest& r) override {
    return call("CompleteWorkflowTask", &Stub::CompleteWorkflowTask, r, std::chrono::seconds(30));
  }
  void fail_workflow_task(const v1::FailWorkflowTaskRequest& r) override {
    call("FailWorkflowTask", &Stub::FailWorkflowTask, r, std::chrono::seconds(30));
  }
  v1::PollActivityTaskResponse poll_activity_task(const v1::PollActivityTaskRequest& r) override {
    return poll("PollActivityTask", &Stub::PollActivityTask, r);
  }
  void cancel_polls() override {
    std::lock_guard lock(polls_mu_);
    for (grpc::ClientContext* poll : polls_) poll->TryCancel();
  }
  bool heartbeat_activity(const v1::HeartbeatActivityRequest& r) override {
    return call("HeartbeatActivity", &Stub::HeartbeatActivity, r, std::chrono::seconds(30)).cancel_requested();
  }
  void complete_activity(const v1::CompleteActivityRequest& r) override {
    call("CompleteActivity", &Stub::CompleteActivity, r, std::chrono::seconds(30));
  }
  void fail_activity(const v1::FailActivityRequest& r) override {
    call("FailActivity", &Stub::FailActivity, r, std::chrono::seconds(30));
  }
  v1::CompleteActivityResponse complete_activity_answered(const v1::CompleteActivityRequest& r) override {
    return call("CompleteActivity", &Stub::CompleteActivity, r, std::chrono::seconds(30));
  }
  v1::FailActivityResponse fail_activity_answered(const v1::FailActivityRequest& r) override {
    return call("FailActivity", &Stub::FailActivity, r, std::chrono::seconds(30));
  }
  v1::PutPayloadResponse put_payload(std::string_view bytes) override {
    const auto deadline = std::chrono::system_clock::now() + kBlobTimeout;
    detail::FailOver fail_over(targets_, std::chrono::steady_clock::now() + kBlobTimeout);
    for (size_t at = targets_.current();;) {
      grpc::ClientContext context;
      prepare(context);
      context.set_deadline(deadline);
      v1::PutPayloadResponse out;
      auto writer = targets_.stub(at).PutPayload(&context, &out);
      v1::PutPayloadChunk chunk;
      chunk.set_namespace_(namespace_);  // the first chunk's counts
      size_t offset = 0;
      do {
        chunk.set_data(std::string(bytes.substr(offset, kChunkBytes)));
        offset += kChunkBytes;
        if (!writer->Write(chunk)) break;  // the server ended the call: Finish says why
      } while (offset < bytes.size());
      writer->WritesDone();
      grpc::Status s = writer->Finish();
      if (s.ok()) return out;
      if (!fail_over.next(at, s)) throw RpcError(s.error_code(), "PutPayload: " + fail_over.message(s));
    }
  }
  std::string get_payload(const std::string& sha256) override {
    const auto deadline = std::chrono::system_clock::now() + kBlobTimeout;
    detail::FailOver fail_over(targets_, std::chrono::steady_clock::now() + kBlobTimeout);
    for (size_t at = targets_.current();;) {
      grpc::ClientContext context;
      prepare(context);
      context.set_deadline(deadline);
      v1::GetPayloadRequest r;
      r.set_namespace_(namespace_);
      r.set_sha256(sha256);
      auto reader = targets_.stub(at).GetPayload(&context, r);
      v1::GetPayloadChunk chunk;
      std::string out;
      while (reader->Read(&chunk)) {
        if (out.empty()) out.reserve(static_cast<size_t>(chunk.total_size()));
        out += chunk.data();
      }
      grpc::Status s = reader->Finish();
      if (s.ok()) return out;
      if (!fail_over.next(at, s)) throw RpcError(s.error_code(), "GetPayload: " + fail_over.message(s));
    }
  }
  void report_activity_canceled(const v1::ReportActivityCanceledRequest& r) override {
    call("ReportActivityCanceled", &Stub::ReportActivityCanceled, r, std::chrono::seconds(30));
  }

 private:
  // Longer than the server's poll timeout (60 s), so an empty poll comes from
  // the server rather than from this deadline.
  static constexpr std::chrono::seconds kPollTimeout{70};
  static constexpr std::chrono::minutes kBlobTimeout{10};
  static constexpr size_t kChunkBytes = 1 << 20;

  static grpc::ChannelArguments channel_arguments(const std::string& server_name, bool several_addresses,
                                                  const ConnectionOptions& options) {
    grpc::ChannelArguments args;
    if (!server_name.empty()) args.SetSslTargetNameOverride(server_name);
    args.SetMaxReceiveMessageSize(64 << 20);
    args.SetMaxSendMessageSize(64 << 20);
    // Reconnect within a second after the server restarts.
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    // With other nodes to go to, a connection attempt (TCP and handshake)
    // gets 2 s rather than gRPC's 20: a node that does not answer fails the
    // call UNAVAILABLE, and the call moves on.
    if (several_addresses) args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 2000);
    // Keepalive (connection_options.hpp) while a call is in flight, a poll
    // that waits in silence included: gRPC stops pinging after two pings
    // with no data sent in between unless told otherwise. Not between
    // calls: a connection with no call has nothing to lose, its next call
    // pings, and gRPC's synchronous API reads the connection only while a
    // call waits, so a ping sent between calls may see its answer too late
    // and close a healthy connection.
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, static_cast<int>(options.keepalive_interval.count()));
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, static_cast<int>(options.keepalive_timeout.count()));
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
    return args;
  }

  // Every call carries the API key, if any.
  void prepare(grpc::ClientContext& context) const {
    if (!authorization_.empty()) context.AddMetadata("authorization", authorization_);
  }
  // `r`, or a copy of it in this connection's namespace when it names none.
  template <typename Req>
  const Req& in_namespace(const Req& r, Req& copy) const {
    if (namespace_.empty()) return r;
    if constexpr (std::is_same_v<Req, v1::SignalWithStartRequest>) {
      if (!r.start().namespace_().empty()) return r;
      copy = r;
      copy.mutable_start()->set_namespace_(namespace_);
      return copy;
    } else {
      const google::protobuf::FieldDescriptor* field = Req::descriptor()->FindFieldByName("namespace");
      if (field == nullptr || !Req::GetReflection()->GetString(r, field).empty()) return r;
      copy = r;
      Req::GetReflection()->SetString(&copy, field, namespace_);
      return copy;
    }
  }

  // A call the server refuses for now (busy, or its shard moving between
  // nodes) is sent again, unchanged, until the timeout; one a node answers
  // UNAVAILABLE otherwise goes to the next address (server_targets.hpp).
  template <typename Req, typename Resp>
  Resp call(const char* what, grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*), const Req& asked,
            std::chrono::seconds timeout) {
    Req copy;
    const Req& r = in_namespace(asked, copy);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    detail::BusyBackoff backoff(deadline);
    detail::FailOver fail_over(targets_, deadline);
    for (size_t at = targets_.current();;) {
      grpc::ClientContext context;
      prepare(context);
      context.set_deadline(std::chrono::system_clock::now() +
                           std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
      Resp out;
      grpc::Status s = (targets_.stub(at).*method)(&context, r, &out);
      if (s.ok()) return out;
      if (refused_for_now(s, context) && backoff.wait()) continue;
      if (!fail_over.next(at, s)) throw RpcError(s.error_code(), std::string(what) + ": " + fail_over.message(s));
    }
  }
  // Status::busy() or Status::moved() on the server: nothing was done.
  static bool refused_for_now(const grpc::Status& s, const grpc::ClientContext& context) {
    return (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED ||
            s.error_code() == grpc::StatusCode::UNAVAILABLE) &&
           context.GetServerTrailingMetadata().count(kRetryableTrailer) > 0;
  }

  // A long-poll that cancel_polls() can end; canceled, it answers empty.
  // One a node answers UNAVAILABLE moves later calls to the next address
  // and fails: the worker's poll loop polls again after a pause.
  template <typename Req, typename Resp>
  Resp poll(const char* what, grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*), const Req& asked) {
    Req copy;
    const Req& r = in_namespace(asked, copy);
    grpc::ClientContext context;
    prepare(context);
    context.set_deadline(std::chrono::system_clock::now() + kPollTimeout);
    {
      std::lock_guard lock(polls_mu_);
      polls_.insert(&context);  // canceled before the call starts, it starts canceled
    }
    Resp out;
    const size_t at = targets_.current();
    grpc::Status s = (targets_.stub(at).*method)(&context, r, &out);
    {
      std::lock_guard lock(polls_mu_);
      polls_.erase(&context);
    }
    if (s.error_code() == grpc::StatusCode::CANCELLED) return Resp{};
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE && targets_.size() > 1) {
      // The worker polls again after its pause, at the next address.
      const size_t next = targets_.move_past(at);
      throw RpcError(s.error_code(), std::string(what) + ": " + targets_.address(at) + ": " + s.error_message() +
                                         " (polling " + targets_.address(next) + " next)");
    }
    if (!s.ok()) throw RpcError(s.error_code(), std::string(what) + ": " + s.error_message());
    return out;
  }

  const std::string authorization_;  // "Bearer <key>", or "" to send none
  const std::string namespace_;      // "" leaves requests as they are
  detail::ServerTargets targets_;
  std::mutex polls_mu_;
  std::set<grpc::ClientContext*> polls_;  // in flight, for cancel_polls()
};

}  // namespace

std::shared_ptr<Connection> Connection::remote(const std::string& address) {
  return remote(address, ConnectionOptions{});
}

std::shared_ptr<Connection> Connection::remote(const std::string& address, const TlsOptions& tls) {
  ConnectionOptions options;
  options.tls = tls;
  return remote(address, options);
}

std::shared_ptr<Connection> Connection::remote(const std::string& address, const ConnectionOptions& options) {
  const std::vector<std::string> addresses = detail::parse_address_list(address);
  for (const auto& [name, value] : {std::pair{"keepalive_interval", options.keepalive_interval},
                                    std::pair{"keepalive_timeout", options.keepalive_timeout}}) {
    if (value < std::chrono::seconds(1) || value > std::chrono::hours(24)) {
      throw Error("ConnectionOptions::" + std::string(name) + " is " + std::to_string(value.count()) +
                  " ms; it must be between 1 s (nodes refuse pings more often than every 500 ms) and 24 h");
    }
  }
  if (!options.tls) {
    return std::make_shared<RemoteConnection>(addresses, grpc::InsecureChannelCredentials(), "", options);
  }
  const TlsOptions& tls = *options.tls;
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = tls.server_ca_pem;
  ssl.pem_cert_chain = tls.client_cert_pem;
  ssl.pem_private_key = tls.client_key_pem;
  return std::make_shared<RemoteConnection>(addresses, grpc::SslCredentials(ssl), tls.server_name, options);
}

ConnectionOptions ConnectionOptions::from_environment() {
  ConnectionOptions options;
  options.tls = TlsOptions::from_environment();
  if (const char* key = std::getenv("REPRISE_API_KEY")) options.api_key = key;
  if (const char* ns = std::getenv("REPRISE_NAMESPACE")) options.namespace_name = ns;
  return options;
}

namespace {

using history::next_run_named_by;

// The run of `run_id`'s chain that is current now: the first one not closed
// into a next one.
std::string current_run_of_chain(Connection& connection, const std::string& workflow_id, std::string run_id) {
  while (!run_id.empty()) {
    v1::GetHistoryRequest r;
    r.mutable_workflow_execution()->set_workflow_id(workflow_id);
    r.mutable_workflow_execution()->set_run_id(run_id);
    r.set_close_event_only(true);
    const v1::GetHistoryResponse out = connection.get_history(r, std::chrono::seconds(30));
    if (out.history().events_size() == 0) return run_id;  // running
    std::string next = next_run_named_by(out.history().events(0));
    if (next.empty()) return run_id;  // closed for good
    run_id = std::move(next);
  }
  return run_id;
}

}  // namespace

v1::Payloads wait_for_workflow_result(Connection& connection, const std::string& workflow_id, std::string run_id,
                                      std::optional<std::chrono::milliseconds> timeout) {
  const auto deadline =
      timeout ? std::chrono::steady_clock::now() + *timeout : std::chrono::steady_clock::time_point::max();
  while (true) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      throw ResultTimeoutError("workflow '" + workflow_id + "' did not close within " +
                               std::to_string(timeout->count()) + " ms");
    }
    const std::chrono::milliseconds wait = std::min<std::chrono::milliseconds>(left, std::chrono::seconds(60));
    v1::GetHistoryRequest r;
    r.mutable_workflow_execution()->set_workflow_id(workflow_id);
    r.mutable_workflow_execution()->set_run_id(run_id);
    r.set_wait_new_event(true);
    r.set_close_event_only(true);
    r.set_follow_runs(true);  // one call waits out a chain of continue-as-new and retries
    r.mutable_wait_timeout()->set_seconds(wait.count() / 1000);
    r.mutable_wait_timeout()->set_nanos(static_cast<int32_t>(wait.count() % 1000) * 1000000);
    const v1::GetHistoryResponse out = connection.get_history(r, std::chrono::seconds(70));
    if (out.history().events_size() == 0) continue;  // still running
    const v1::HistoryEvent& e = out.history().events(0);
    // Continued or retried (the wait ended as the run closed): the next run decides.
    if (std::string next = next_run_named_by(e); !next.empty()) {
      run_id = std::move(next);
      continue;
    }
    return workflow_result_of(connection, workflow_id, e);
  }
}

v1::Payloads workflow_result_of(Connection& connection, const std::string& workflow_id, const v1::HistoryEvent& e) {
  if (std::string next = next_run_named_by(e); !next.empty()) {
    return wait_for_workflow_result(connection, workflow_id, std::move(next));
  }
  switch (e.attributes_case()) {
    case v1::HistoryEvent::kWorkflowExecutionCompleted:
      return e.workflow_execution_completed().result();
    case v1::HistoryEvent::kWorkflowExecutionFailed:
      throw WorkflowFailedError(
          "workflow '" + workflow_id + "' failed: " + e.workflow_execution_failed().failure().message(),
          e.workflow_execution_failed().failure().type());
    case v1::HistoryEvent::kWorkflowExecutionTerminated:
      throw WorkflowFailedError(
          "workflow '" + workflow_id + "' was terminated: " + e.workflow_execution_terminated().reason(), "");
    case v1::HistoryEvent::kWorkflowExecutionCanceled:
      throw WorkflowFailedError("workflow '" + workflow_id + "' was canceled", "");
    case v1::HistoryEvent::kWorkflowExecutionTimedOut:
      throw WorkflowFailedError("workflow '" + workflow_id + "' timed out", "");
    default:
      throw Error("workflow '" + workflow_id + "' closed with an unexpected event");
  }
}

// The workers registered for eager starts, by task queue.
class Connection::EagerStartTargets {
 public:
  void add(const std::string& task_queue, std::shared_ptr<EagerStartTarget> target) {
    std::lock_guard lock(mu_);
    targets_.emplace(task_queue, std::move(target));
  }
  void remove(const std::string& task_queue, const EagerStartTarget* target) {
    std::lock_guard lock(mu_);
    auto [first, last] = targets_.equal_range(task_queue);
    for (auto it = first; it != last; ++it) {
      if (it->second.get() == target) {
        targets_.erase(it);
        return;
      }
    }
  }
  // A worker for `task_queue` holding a free thread, or null.
  std::shared_ptr<EagerStartTarget> reserve(const std::string& task_queue) {
    std::lock_guard lock(mu_);
    auto [first, last] = targets_.equal_range(task_queue);
    for (auto it = first; it != last; ++it) {
      if (it->second->reserve()) return it->second;
    }
    return nullptr;
  }

 private:
  std::mutex mu_;
  std::multimap<std::string, std::shared_ptr<EagerStartTarget>> targets_;
};

Connection::Connection() : eager_start_targets_(std::make_shared<EagerStartTargets>()) {}

void Connection::add_eager_start_target(const std::string& task_queue, std::shared_ptr<EagerStartTarget> target) {
  eager_start_targets_->add(task_queue, std::move(target));
}

void Connection::remove_eager_start_target(const std::string& task_queue, const EagerStartTarget* target) {
  eager_start_targets_->remove(task_queue, target);
}

v1::StartWorkflowResponse Connection::start_workflow_eagerly(v1::StartWorkflowRequest r) {
  std::shared_ptr<EagerStartTarget> target = eager_start_targets_->reserve(r.task_queue().name());
  if (!target) return start_workflow(r);
  // The held thread waits for this answer: it must not wait for the result
  // too (the caller waits for that afterwards).
  r.clear_wait_for_result();
  r.clear_wait_timeout();
  r.set_request_eager_execution(true);
  r.set_identity(target->identity());  // who the first task is started for
  v1::StartWorkflowResponse out;
  try {
    out = start_workflow(r);
  } catch (...) {
    target->release();
    throw;
  }
  if (out.eager_workflow_task().task_token().empty()) {
    target->release();  // not taken: the task went to the queue
  } else {
    target->run(std::move(*out.mutable_eager_workflow_task()));
    out.clear_eager_workflow_task();
  }
  return out;
}

v1::CompleteActivityResponse Connection::complete_activity_answered(const v1::CompleteActivityRequest& r) {
  v1::CompleteActivityRequest without_ask = r;
  without_ask.clear_eager_workflow_task_queue();  // a task started for nobody would wait for its timeout
  complete_activity(without_ask);
  return {};
}

v1::FailActivityResponse Connection::fail_activity_answered(const v1::FailActivityRequest& r) {
  v1::FailActivityRequest without_ask = r;
  without_ask.clear_eager_workflow_task_queue();
  fail_activity(without_ask);
  return {};
}

v1::RegisterNamespaceResponse Connection::register_namespace(const v1::RegisterNamespaceRequest&) {
  throw RpcError(static_cast<int>(grpc::StatusCode::UNIMPLEMENTED), "this connection cannot register namespaces");
}
v1::DescribeNamespaceResponse Connection::describe_namespace(const v1::DescribeNamespaceRequest&) {
  throw RpcError(static_cast<int>(grpc::StatusCode::UNIMPLEMENTED), "this connection cannot describe namespaces");
}
v1::ListNamespacesResponse Connection::list_namespaces(const v1::ListNamespacesRequest&) {
  throw RpcError(static_cast<int>(grpc::StatusCode::UNIMPLEMENTED), "this connection cannot list namespaces");
}
v1::UpdateNamespaceResponse Connection::update_namespace(const v1::UpdateNamespaceRequest&) {
  throw RpcError(static_cast<int>(grpc::StatusCode::UNIMPLEMENTED), "this connection cannot update namespaces");
}

v1::DeleteWorkflowExecutionResponse Connection::delete_workflow(const v1::DeleteWorkflowExecutionRequest&) {
  throw RpcError(static_cast<int>(grpc::StatusCode::UNIMPLEMENTED),
                 "DeleteWorkflowExecution: this connection cannot delete workflows");
}

namespace detail {

std::string new_request_id() {
  thread_local std::mt19937_64 random{std::random_device()()};
  const uint64_t hi = random(), lo = random();
  return history::format_uuid_v4(hi, lo);
}

void request_cancel(Connection& connection, const std::string& workflow_id, const std::string& run_id,
                    const std::string& reason) {
  v1::RequestCancelWorkflowRequest r;
  r.mutable_workflow_execution()->set_workflow_id(workflow_id);
  r.mutable_workflow_execution()->set_run_id(run_id);
  r.set_reason(reason);
  r.set_identity("reprise-cpp-client");
  connection.request_cancel_workflow(r);
}

void terminate(Connection& connection, const std::string& workflow_id, const std::string& run_id,
               const std::string& reason) {
  v1::TerminateWorkflowRequest r;
  r.mutable_workflow_execution()->set_workflow_id(workflow_id);
  r.mutable_workflow_execution()->set_run_id(run_id);
  r.set_reason(reason);
  r.set_identity("reprise-cpp-client");
  connection.terminate_workflow(r);
}

v1::DescribeWorkflowResponse describe(Connection& connection, const std::string& workflow_id,
                                      const std::string& run_id) {
  v1::DescribeWorkflowRequest r;
  r.mutable_workflow_execution()->set_workflow_id(workflow_id);
  r.mutable_workflow_execution()->set_run_id(run_id);
  return connection.describe_workflow(r);
}

void on_current_run(Connection& connection, const std::string& workflow_id, const std::string& run_id,
                    const std::function<void(const std::string& current_run_id)>& call) {
  std::string current = current_run_of_chain(connection, workflow_id, run_id);
  while (true) {
    try {
      call(current);
      return;
    } catch (const RpcError& e) {
      if (e.code() != static_cast<int>(grpc::StatusCode::FAILED_PRECONDITION)) throw;
      std::string next = current_run_of_chain(connection, workflow_id, current);
      if (next == current) throw;  // not because it moved on
      current = std::move(next);
    }
  }
}

PayloadLoader blob_loader(std::shared_ptr<Connection> connection) {
  return [connection = std::move(connection)](const v1::Payload& p) {
    return Blobs(*connection, {.cache_bytes = 0}).resolve(p);
  };
}

}  // namespace detail

}  // namespace reprise
