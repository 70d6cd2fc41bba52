#include "engine/server/grpc_service.hpp"

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace reprise::engine {

GrpcService::~GrpcService() {
  std::unique_lock lock(streams_mu_);
  streams_cv_.wait(lock, [this] { return streams_ == 0; });
}

GrpcService::StreamRef::StreamRef(GrpcService& service) : service_(service) {
  std::lock_guard lock(service_.streams_mu_);
  ++service_.streams_;
}

GrpcService::StreamRef::~StreamRef() {
  // Notified under the lock: the service may be destroyed once it unlocks.
  std::lock_guard lock(service_.streams_mu_);
  if (--service_.streams_ == 0) service_.streams_cv_.notify_all();
}

grpc::Status to_grpc_status(const Status& status) {
  if (status.is_ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), status.message());
}

namespace {

// Who may call what: any one of the roles listed (admin may call anything).
// Workers also read histories (a task's later pages) and payloads; clients
// read histories too (a workflow's result comes as its close event).
constexpr Roles kWorkerCalls{Role::kWorker};
constexpr Roles kClientCalls{Role::kClient};
constexpr Roles kReaderCalls{Role::kReader};
constexpr Roles kHistoryReads{Role::kReader, Role::kWorker, Role::kClient};
constexpr Roles kPayloadReads{Role::kReader, Role::kWorker, Role::kClient};
constexpr Roles kPayloadWrites{Role::kWorker, Role::kClient};
constexpr Roles kAdminCalls{Role::kAdmin};
constexpr Roles kAnyRole{Role::kWorker, Role::kClient, Role::kReader};

}  // namespace

std::string_view GrpcService::authorization(const grpc::CallbackServerContext* context) {
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return {};
  return {it->second.data(), it->second.size()};
}

Status GrpcService::authorize(const grpc::CallbackServerContext* context, Roles roles, const std::string& namespace_id,
                              std::string_view what) const {
  return auth_.authorize(authorization(context), roles, namespace_id, what);
}

Status GrpcService::authorize_token(const grpc::CallbackServerContext* context, Roles roles,
                                    const std::string& task_token, std::string_view what) const {
  if (!auth_.keys_defined()) return Status::ok();  // open: no token decoded twice
  // A caller without a live key is refused before its token is looked at.
  if (Status as_caller = authorize(context, roles, "*", what); as_caller.code() == StatusCode::kUnauthenticated) {
    return as_caller;
  }
  Result<std::string> ns = engine_.task_namespace(task_token);
  if (!ns) return ns.status();
  return authorize(context, roles, *ns, what);
}

grpc::ServerUnaryReactor* GrpcService::refuse(grpc::CallbackServerContext* context, const Status& refused) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(to_grpc_status(refused));
  return reactor;
}

template <typename Req, typename Resp>
grpc::ServerUnaryReactor* GrpcService::forward(grpc::CallbackServerContext* context, const Req* request, Resp* response,
                                               void (Engine::*method)(Req, Reply<Resp>), const Status& authorized) {
  if (!authorized) return refuse(context, authorized);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  (engine_.*method)(*request, [context, reactor, response](Result<Resp> result) {
    if (!result) {
      if (result.status().retryable()) context->AddTrailingMetadata(kRetryableTrailer, "1");
      reactor->Finish(to_grpc_status(result.status()));
      return;
    }
    *response = std::move(result).value();
    reactor->Finish(grpc::Status::OK);
  });
  return reactor;
}

namespace {

// A long-poll's reactor: when its client goes away (disconnect, cancel,
// deadline), the engine's poll ends at once rather than handing a task to
// nobody.
class PollReactor final : public grpc::ServerUnaryReactor {
 public:
  PollReactor() : ticket_(std::make_shared<PollTicket>()) {}
  void OnCancel() override { ticket_->cancel(); }
  // gRPC runs OnDone after OnCancel has returned, an order kept by its own
  // reference count inside libgrpc++, which ThreadSanitizer does not see: it
  // reported ~PollTicket here against cancel() on another gRPC thread.
  // Taking the ticket's lock (canceled() does) before the ticket may go
  // makes that order visible to it.
  void OnDone() override {
    (void)ticket_->canceled();
    delete this;
  }
  const std::shared_ptr<PollTicket>& ticket() const { return ticket_; }

 private:
  std::shared_ptr<PollTicket> ticket_;
};

}  // namespace

template <typename Req, typename Resp>
grpc::ServerUnaryReactor* GrpcService::forward_poll(
    grpc::CallbackServerContext* context, const Req* request, Resp* response,
    void (Engine::*method)(Req, Reply<Resp>, std::shared_ptr<PollTicket>), const Status& authorized) {
  if (!authorized) return refuse(context, authorized);
  auto* reactor = new PollReactor();
  (engine_.*method)(
      *request,
      [reactor, response](Result<Resp> result) {
        if (!result) {
          reactor->Finish(to_grpc_status(result.status()));
          return;
        }
        *response = std::move(result).value();
        reactor->Finish(grpc::Status::OK);
      },
      reactor->ticket());
  return reactor;
}

template <typename Req, typename Resp>
grpc::ServerUnaryReactor* GrpcService::route(grpc::CallbackServerContext* context, const Req* request, Resp* response,
                                             void (Engine::*method)(Req, Reply<Resp>), PeerCall<Req, Resp> peer_call,
                                             const Status& authorized, const std::string& owner) {
  if (authorized && !owner.empty() && !ClusterPeers::forwarded(context)) {
    return relay(context, request, response, peer_call, owner);
  }
  return forward(context, request, response, method, authorized);
}

grpc::Status GrpcService::relayed_answer(grpc::CallbackServerContext* context, const grpc::Status& answer,
                                         const std::string& address) {
  if (answer.ok() || answer.error_code() != grpc::StatusCode::UNAVAILABLE) return answer;
  // The node at `address` is down or refused for now: this node is up, and
  // the caller may send the same call again (the SDK backs off and does).
  context->AddTrailingMetadata(kRetryableTrailer, "1");
  return grpc::Status(answer.error_code(), "forwarded to the node at " + address + ": " + answer.error_message());
}

template <typename Req, typename Resp>
grpc::ServerUnaryReactor* GrpcService::relay(grpc::CallbackServerContext* context, const Req* request, Resp* response,
                                             PeerCall<Req, Resp> peer_call, const std::string& address) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  std::shared_ptr<grpc::ClientContext> client = peers_.context_for(context);
  // `request` and `response` are the call's until it is finished.
  (peers_.stub(address).async()->*peer_call)(client.get(), request, response,
                                             [context, reactor, client, address](const grpc::Status& s) {
                                               reactor->Finish(relayed_answer(context, s, address));
                                             });
  return reactor;
}

namespace {

// A worker's poll relayed to its queue's owner: when the worker goes away,
// the relayed poll is canceled with it, so the owner hands its task to
// nobody.
class RelayedPollReactor final : public grpc::ServerUnaryReactor {
 public:
  explicit RelayedPollReactor(std::shared_ptr<grpc::ClientContext> client) : client_(std::move(client)) {}
  void OnCancel() override { client_->TryCancel(); }
  void OnDone() override { delete this; }

 private:
  std::shared_ptr<grpc::ClientContext> client_;
};

}  // namespace

template <typename Req, typename Resp>
grpc::ServerUnaryReactor* GrpcService::poll_owner(grpc::CallbackServerContext* context, const Req* request,
                                                  Resp* response,
                                                  void (Engine::*method)(Req, Reply<Resp>, std::shared_ptr<PollTicket>),
                                                  PeerCall<Req, Resp> peer_call, const Status& authorized) {
  constexpr TaskKind kind =
      std::is_same_v<Req, v1::PollWorkflowTaskRequest> ? TaskKind::kWorkflowTask : TaskKind::kActivityTask;
  // A worker's sticky queue lives on the node it polls; a forwarded poll is
  // never forwarded again.
  const bool here =
      !authorized || ClusterPeers::forwarded(context) || request->task_queue().kind() == v1::TASK_QUEUE_KIND_STICKY;
  const std::string owner =
      here ? std::string() : engine_.queue_owner_address(request->namespace_(), kind, request->task_queue().name());
  if (owner.empty()) return forward_poll(context, request, response, method, authorized);
  std::shared_ptr<grpc::ClientContext> client = peers_.context_for(context);
  auto* reactor = new RelayedPollReactor(client);
  // `request` and `response` are the call's until it is finished.
  (peers_.stub(owner).async()->*peer_call)(
      client.get(), request, response,
      [context, reactor, client, owner](const grpc::Status& s) { reactor->Finish(relayed_answer(context, s, owner)); });
  return reactor;
}

grpc::ServerUnaryReactor* GrpcService::StartWorkflow(grpc::CallbackServerContext* c, const v1::StartWorkflowRequest* q,
                                                     v1::StartWorkflowResponse* r) {
  return route(c, q, r, &Engine::start_workflow, &v1::WorkflowService::Stub::async::StartWorkflow,
               authorize(c, kClientCalls, q->namespace_(), "StartWorkflow"),
               engine_.owner_address(q->namespace_(), q->workflow_id()));
}
grpc::ServerUnaryReactor* GrpcService::SignalWorkflow(grpc::CallbackServerContext* c,
                                                      const v1::SignalWorkflowRequest* q,
                                                      v1::SignalWorkflowResponse* r) {
  return route(c, q, r, &Engine::signal_workflow, &v1::WorkflowService::Stub::async::SignalWorkflow,
               authorize(c, kClientCalls, q->namespace_(), "SignalWorkflow"),
               engine_.owner_address(q->namespace_(), q->workflow_execution().workflow_id()));
}
grpc::ServerUnaryReactor* GrpcService::SignalWithStart(grpc::CallbackServerContext* c,
                                                       const v1::SignalWithStartRequest* q,
                                                       v1::StartWorkflowResponse* r) {
  return route(c, q, r, &Engine::signal_with_start, &v1::WorkflowService::Stub::async::SignalWithStart,
               authorize(c, kClientCalls, q->start().namespace_(), "SignalWithStart"),
               engine_.owner_address(q->start().namespace_(), q->start().workflow_id()));
}
grpc::ServerUnaryReactor* GrpcService::QueryWorkflow(grpc::CallbackServerContext* c, const v1::QueryWorkflowRequest* q,
                                                     v1::QueryWorkflowResponse* r) {
  return route(c, q, r, &Engine::query_workflow, &v1::WorkflowService::Stub::async::QueryWorkflow,
               authorize(c, kClientCalls, q->namespace_(), "QueryWorkflow"),
               engine_.owner_address(q->namespace_(), q->workflow_execution().workflow_id()));
}
grpc::ServerUnaryReactor* GrpcService::RequestCancelWorkflow(grpc::CallbackServerContext* c,
                                                             const v1::RequestCancelWorkflowRequest* q,
                                                             v1::RequestCancelWorkflowResponse* r) {
  return route(c, q, r, &Engine::request_cancel_workflow, &v1::WorkflowService::Stub::async::RequestCancelWorkflow,
               authorize(c, kClientCalls, q->namespace_(), "RequestCancelWorkflow"),
               engine_.owner_address(q->namespace_(), q->workflow_execution().workflow_id()));
}
grpc::ServerUnaryReactor* GrpcService::TerminateWorkflow(grpc::CallbackServerContext* c,
                                                         const v1::TerminateWorkflowRequest* q,
                                                         v1::TerminateWorkflowResponse* r) {
  return route(c, q, r, &Engine::terminate_workflow, &v1::WorkflowService::Stub::async::TerminateWorkflow,
               authorize(c, kClientCalls, q->namespace_(), "TerminateWorkflow"),
               engine_.owner_address(q->namespace_(), q->workflow_execution().workflow_id()));
}
grpc::ServerUnaryReactor* GrpcService::DeleteWorkflowExecution(grpc::CallbackServerContext* c,
                                                               const v1::DeleteWorkflowExecutionRequest* q,
                                                               v1::DeleteWorkflowExecutionResponse* r) {
  return route(c, q, r, &Engine::delete_workflow_execution, &v1::WorkflowService::Stub::async::DeleteWorkflowExecution,
               authorize(c, kAdminCalls, q->namespace_(), "DeleteWorkflowExecution"),
               engine_.owner_address(q->namespace_(), q->workflow_execution().workflow_id()));
}
grpc::ServerUnaryReactor* GrpcService::DescribeWorkflow(grpc::CallbackServerContext* c,
                                                        const v1::DescribeWorkflowRequest* q,
                                                        v1::DescribeWorkflowResponse* r) {
  return forward(c, q, r, &Engine::describe_workflow, authorize(c, kReaderCalls, q->namespace_(), "DescribeWorkflow"));
}
grpc::ServerUnaryReactor* GrpcService::GetHistory(grpc::CallbackServerContext* c, const v1::GetHistoryRequest* q,
                                                  v1::GetHistoryResponse* r) {
  // A history long-poll is woken by the commits of the node that serves
  // the execution.
  const Status authorized = authorize(c, kHistoryReads, q->namespace_(), "GetHistory");
  const std::string owner = engine_.owner_address(q->namespace_(), q->workflow_execution().workflow_id());
  if (authorized && !owner.empty() && !ClusterPeers::forwarded(c))
    return relay(c, q, r, &v1::WorkflowService::Stub::async::GetHistory, owner);
  return forward_poll(c, q, r, &Engine::get_history, authorized);
}
grpc::ServerUnaryReactor* GrpcService::ListWorkflows(grpc::CallbackServerContext* c, const v1::ListWorkflowsRequest* q,
                                                     v1::ListWorkflowsResponse* r) {
  return forward(c, q, r, &Engine::list_workflows, authorize(c, kReaderCalls, q->namespace_(), "ListWorkflows"));
}
grpc::ServerUnaryReactor* GrpcService::Health(grpc::CallbackServerContext* c, const v1::HealthRequest*,
                                              v1::HealthResponse* r) {
  const std::string problem = engine_.server_problem();
  r->set_status(problem.empty() ? "SERVING" : "NOT_SERVING");
  if (!problem.empty()) r->add_problems(problem);
  r->set_version("0.1.0");
  grpc::ServerUnaryReactor* reactor = c->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}
grpc::ServerUnaryReactor* GrpcService::GetStorageStats(grpc::CallbackServerContext* c,
                                                       const v1::GetStorageStatsRequest*,
                                                       v1::GetStorageStatsResponse* r) {
  if (Status s = authorize(c, kAdminCalls, "*", "GetStorageStats"); !s) return refuse(c, s);
  const StorageStats s = engine_.storage_stats();
  r->set_transitions(s.writes.transitions);
  r->set_jobs(s.writes.jobs);
  r->set_commits(s.writes.batches);
  r->set_largest_batch(s.writes.largest_batch);
  for (int64_t n : s.writes.batch_sizes) r->add_batch_sizes(n);
  r->set_wal_syncs(s.wal_syncs);
  r->set_database_syncs(s.database_syncs);
  const CheckpointStats& cp = s.checkpoints;
  r->set_passive_checkpoints(cp.passive);
  r->set_restart_checkpoints(cp.restarts);
  r->set_restart_checkpoints_busy(cp.restarts_busy);
  r->set_failed_checkpoints(cp.failed);
  r->set_checkpointed_pages(cp.copied_pages);
  r->set_checkpoint_micros(std::chrono::duration_cast<std::chrono::microseconds>(cp.time).count());
  r->set_longest_checkpoint_micros(std::chrono::duration_cast<std::chrono::microseconds>(cp.longest).count());
  r->set_wal_pages(cp.wal_pages);
  r->set_largest_wal_pages(cp.largest_wal_pages);
  grpc::ServerUnaryReactor* reactor = c->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}
grpc::ServerUnaryReactor* GrpcService::RegisterNamespace(grpc::CallbackServerContext* c,
                                                         const v1::RegisterNamespaceRequest* q,
                                                         v1::RegisterNamespaceResponse* r) {
  return forward(c, q, r, &Engine::register_namespace,
                 authorize(c, kAdminCalls, q->namespace_().empty() ? "*" : q->namespace_(), "RegisterNamespace"));
}
grpc::ServerUnaryReactor* GrpcService::DescribeNamespace(grpc::CallbackServerContext* c,
                                                         const v1::DescribeNamespaceRequest* q,
                                                         v1::DescribeNamespaceResponse* r) {
  return forward(c, q, r, &Engine::describe_namespace, authorize(c, kAnyRole, q->namespace_(), "DescribeNamespace"));
}
grpc::ServerUnaryReactor* GrpcService::ListNamespaces(grpc::CallbackServerContext* c,
                                                      const v1::ListNamespacesRequest* q,
                                                      v1::ListNamespacesResponse* r) {
  // Any live key may list; it is shown the namespaces it may use.
  if (Status s = authorize(c, kAnyRole, "*", "ListNamespaces"); !s && s.code() != StatusCode::kPermissionDenied) {
    return refuse(c, s);
  }
  grpc::ServerUnaryReactor* reactor = c->DefaultReactor();
  engine_.list_namespaces(*q, [this, c, reactor, r](Result<v1::ListNamespacesResponse> listed) {
    if (!listed) return reactor->Finish(to_grpc_status(listed.status()));
    for (const v1::NamespaceInfo& info : listed->namespaces()) {
      if (auth_.may_see(authorization(c), info.name())) *r->add_namespaces() = info;
    }
    reactor->Finish(grpc::Status::OK);
  });
  return reactor;
}
grpc::ServerUnaryReactor* GrpcService::UpdateNamespace(grpc::CallbackServerContext* c,
                                                       const v1::UpdateNamespaceRequest* q,
                                                       v1::UpdateNamespaceResponse* r) {
  return forward(c, q, r, &Engine::update_namespace, authorize(c, kAdminCalls, q->namespace_(), "UpdateNamespace"));
}
grpc::ServerUnaryReactor* GrpcService::PollWorkflowTask(grpc::CallbackServerContext* c,
                                                        const v1::PollWorkflowTaskRequest* q,
                                                        v1::PollWorkflowTaskResponse* r) {
  return poll_owner(c, q, r, &Engine::poll_workflow_task, &v1::WorkflowService::Stub::async::PollWorkflowTask,
                    authorize(c, kWorkerCalls, q->namespace_(), "PollWorkflowTask"));
}
grpc::ServerUnaryReactor* GrpcService::CompleteWorkflowTask(grpc::CallbackServerContext* c,
                                                            const v1::CompleteWorkflowTaskRequest* q,
                                                            v1::CompleteWorkflowTaskResponse* r) {
  Status authorized = authorize_token(c, kWorkerCalls, q->task_token(), "CompleteWorkflowTask");
  // The worker's sticky queue lives on the node it came through.
  if (authorized)
    engine_.note_sticky_home(q->sticky_attributes().worker_task_queue().name(), ClusterPeers::forwarded_from(c));
  return route(c, q, r, &Engine::complete_workflow_task, &v1::WorkflowService::Stub::async::CompleteWorkflowTask,
               authorized, engine_.token_owner_address(q->task_token()));
}
grpc::ServerUnaryReactor* GrpcService::FailWorkflowTask(grpc::CallbackServerContext* c,
                                                        const v1::FailWorkflowTaskRequest* q,
                                                        v1::FailWorkflowTaskResponse* r) {
  return route(c, q, r, &Engine::fail_workflow_task, &v1::WorkflowService::Stub::async::FailWorkflowTask,
               authorize_token(c, kWorkerCalls, q->task_token(), "FailWorkflowTask"),
               engine_.token_owner_address(q->task_token()));
}
grpc::ServerUnaryReactor* GrpcService::PollActivityTask(grpc::CallbackServerContext* c,
                                                        const v1::PollActivityTaskRequest* q,
                                                        v1::PollActivityTaskResponse* r) {
  return poll_owner(c, q, r, &Engine::poll_activity_task, &v1::WorkflowService::Stub::async::PollActivityTask,
                    authorize(c, kWorkerCalls, q->namespace_(), "PollActivityTask"));
}
grpc::ServerUnaryReactor* GrpcService::HeartbeatActivity(grpc::CallbackServerContext* c,
                                                         const v1::HeartbeatActivityRequest* q,
                                                         v1::HeartbeatActivityResponse* r) {
  return route(c, q, r, &Engine::heartbeat_activity, &v1::WorkflowService::Stub::async::HeartbeatActivity,
               authorize_token(c, kWorkerCalls, q->task_token(), "HeartbeatActivity"),
               engine_.token_owner_address(q->task_token()));
}
grpc::ServerUnaryReactor* GrpcService::CompleteActivity(grpc::CallbackServerContext* c,
                                                        const v1::CompleteActivityRequest* q,
                                                        v1::CompleteActivityResponse* r) {
  return route(c, q, r, &Engine::complete_activity, &v1::WorkflowService::Stub::async::CompleteActivity,
               authorize_token(c, kWorkerCalls, q->task_token(), "CompleteActivity"),
               engine_.token_owner_address(q->task_token()));
}
grpc::ServerUnaryReactor* GrpcService::FailActivity(grpc::CallbackServerContext* c, const v1::FailActivityRequest* q,
                                                    v1::FailActivityResponse* r) {
  return route(c, q, r, &Engine::fail_activity, &v1::WorkflowService::Stub::async::FailActivity,
               authorize_token(c, kWorkerCalls, q->task_token(), "FailActivity"),
               engine_.token_owner_address(q->task_token()));
}
grpc::ServerUnaryReactor* GrpcService::ReportActivityCanceled(grpc::CallbackServerContext* c,
                                                              const v1::ReportActivityCanceledRequest* q,
                                                              v1::ReportActivityCanceledResponse* r) {
  return route(c, q, r, &Engine::report_activity_canceled, &v1::WorkflowService::Stub::async::ReportActivityCanceled,
               authorize_token(c, kWorkerCalls, q->task_token(), "ReportActivityCanceled"),
               engine_.token_owner_address(q->task_token()));
}

namespace {

// Streams a claim-check blob in the blob store's chunks, one write at a time;
// each chunk is read on `io`, and the reactor is touched by one job at a time
// (the next starts only once gRPC is done with the previous write). Each job
// holds mu_: never contended, it makes that order visible to ThreadSanitizer,
// which cannot see gRPC's own hand-over (Debian's libgrpc is not built with
// it) and otherwise reports chunk_, read by gRPC inside StartWrite, as raced
// with the next job's write.
class PayloadWriter final : public grpc::ServerWriteReactor<v1::GetPayloadChunk> {
 public:
  // `admitted`: the request's namespace, or why the call is refused.
  PayloadWriter(GrpcService& service, BlobStore& blobs, Executor& io, const v1::GetPayloadRequest& request,
                Result<std::string> admitted)
      : stream_(service), io_(io) {
    if (!admitted) {
      Finish(to_grpc_status(admitted.status()));
      return;
    }
    history::Sha256Digest digest{};
    if (!history::digest_from_bytes(request.sha256(), digest)) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "sha256 must be 32 bytes"));
      return;
    }
    io_.post([this, &blobs, digest, ns = std::move(admitted).value()] {
      std::lock_guard lock(mu_);
      Result<std::unique_ptr<BlobReader>> reader = blobs.open(digest, ns);
      if (!reader) {
        Finish(to_grpc_status(reader.status()));
        return;
      }
      reader_ = std::move(reader).value();
      write_next();
    });
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      std::lock_guard lock(mu_);
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client stopped reading"));
      return;
    }
    io_.post([this] {
      std::lock_guard lock(mu_);
      write_next();
    });
  }
  void OnDone() override {
    { std::lock_guard lock(mu_); }  // after the last job
    delete this;
  }

 private:
  void write_next() {
    Result<std::string> chunk = reader_->next_chunk();
    if (!chunk) {
      Finish(to_grpc_status(chunk.status()));
      return;
    }
    if (chunk->empty() && sent_any_) {
      Finish(grpc::Status::OK);
      return;
    }
    sent_any_ = true;  // an empty blob still gets one (empty) chunk with its size
    chunk_.set_total_size(reader_->size());
    chunk_.set_data(std::move(chunk).value());
    StartWrite(&chunk_);
  }

  GrpcService::StreamRef stream_;  // first: released after the reader is gone
  Executor& io_;
  std::mutex mu_;
  std::unique_ptr<BlobReader> reader_;
  v1::GetPayloadChunk chunk_;
  bool sent_any_ = false;
};

// Streams an upload into the blob store, chunk by chunk, up to the limit;
// each chunk is written on `io`, and the next read starts once it is. The
// first chunk names the namespace: `admit` gives it back checked (""
// becomes 'default'), or why the call is refused, before anything is
// stored. Each job holds mu_, as PayloadWriter's do.
class PayloadReader final : public grpc::ServerReadReactor<v1::PutPayloadChunk> {
 public:
  using Admit = std::function<Result<std::string>(const std::string& namespace_id)>;
  PayloadReader(GrpcService& service, BlobStore& blobs, Executor& io, int64_t limit, v1::PutPayloadResponse* response,
                Admit admit)
      : stream_(service), blobs_(blobs), io_(io), limit_(limit), response_(response), admit_(std::move(admit)) {
    StartRead(&chunk_);
  }
  void OnReadDone(bool ok) override {
    io_.post([this, ok] {
      std::lock_guard lock(mu_);
      take(ok);
    });
  }
  // Dropping an unfinished upload writes to the store: not on gRPC's thread,
  // and after gRPC is done with the call, so the service (stream_) waits
  // for it, not the server's shutdown.
  void OnDone() override {
    io_.post([this] {
      { std::lock_guard lock(mu_); }  // after the last job
      delete this;
    });
  }

 private:
  void take(bool ok) {
    if (!writer_) {  // the first chunk, or none at all (an empty upload)
      Result<std::string> ns = admit_(ok ? chunk_.namespace_() : std::string());
      if (!ns) {
        Finish(to_grpc_status(ns.status()));
        return;
      }
      Result<std::unique_ptr<BlobWriter>> writer = blobs_.begin_put(*ns);
      if (!writer) {
        Finish(to_grpc_status(writer.status()));
        return;
      }
      writer_ = std::move(writer).value();
    }
    if (!ok) {  // the client finished sending
      Result<BlobInfo> stored = writer_->finish();
      if (!stored) {
        Finish(to_grpc_status(stored.status()));
        return;
      }
      response_->set_sha256(std::string(history::as_bytes(stored->sha256)));
      response_->set_size(stored->size);
      Finish(grpc::Status::OK);
      return;
    }
    received_ += static_cast<int64_t>(chunk_.data().size());
    if (received_ > limit_) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "the payload is over the blob limit of " + std::to_string(limit_) + " bytes"));
      return;
    }
    if (Status s = writer_->write(chunk_.data()); !s) {
      Finish(to_grpc_status(s));
      return;
    }
    StartRead(&chunk_);
  }

  GrpcService::StreamRef stream_;  // first: released after the writer's discard
  BlobStore& blobs_;
  Executor& io_;
  std::mutex mu_;
  std::unique_ptr<BlobWriter> writer_;  // an unfinished upload is discarded with it
  int64_t limit_;
  int64_t received_ = 0;
  v1::PutPayloadResponse* response_;
  Admit admit_;
  v1::PutPayloadChunk chunk_;
};

}  // namespace

grpc::ServerReadReactor<v1::PutPayloadChunk>* GrpcService::PutPayload(grpc::CallbackServerContext* c,
                                                                      v1::PutPayloadResponse* r) {
  // The context outlives the reactor's reads, so the first chunk's
  // namespace is checked against the caller's key when it comes.
  return new PayloadReader(*this, blobs_, blob_io_, blob_limit_, r,
                           [this, c](const std::string& requested) -> Result<std::string> {
                             std::string ns = requested;
                             REPRISE_RETURN_IF_ERROR(authorize(c, kPayloadWrites, ns, "PutPayload"));
                             REPRISE_RETURN_IF_ERROR(engine_.check_namespace(ns));
                             return ns;
                           });
}

grpc::ServerWriteReactor<v1::GetPayloadChunk>* GrpcService::GetPayload(grpc::CallbackServerContext* c,
                                                                       const v1::GetPayloadRequest* q) {
  auto admitted = [&]() -> Result<std::string> {
    std::string ns = q->namespace_();
    REPRISE_RETURN_IF_ERROR(authorize(c, kPayloadReads, ns, "GetPayload"));
    REPRISE_RETURN_IF_ERROR(engine_.check_namespace(ns));
    return ns;
  };
  return new PayloadWriter(*this, blobs_, blob_io_, *q, admitted());
}

}  // namespace reprise::engine
