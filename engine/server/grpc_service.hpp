// GrpcService: reprise.v1.WorkflowService over gRPC's callback API, a thin
// adapter over Engine. No handler parks a thread: each returns a reactor that
// the engine finishes from its callback (long-polls included). The payload
// streams read and write the blob store on a pool of their own, never on a
// gRPC thread.
//
// In a cluster (docs/cluster.md) a request about an execution whose shard
// another node serves is forwarded to that node (cluster_peers.hpp) and its
// answer returned; a worker's poll is sent to the node that owns its task
// queue (a sticky queue: this node), once.
//
// Every call but Health is first authorized (api_key_auth.hpp) for the roles
// its RPC needs (the table in grpc_service.cpp) and the namespace it names;
// a task token's namespace is the one signed into it.
//
// Lifetime: destroy the service after the grpc::Server that serves it and
// before the Engine and BlobStore it uses. A payload stream's work can
// outlast its call (an unfinished upload is discarded, a store write, on the
// blob pool after gRPC is done with the call, so after Server::Shutdown has
// returned); the destructor waits until every stream has ended.
//
// Thread safety: gRPC runs the handlers on its threads, many at once; they
// share nothing but the Engine (any thread) and the blob pool.
#pragma once

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <memory>
#include <mutex>

#include "engine/engine.hpp"
#include "engine/executor.hpp"
#include "engine/server/api_key_auth.hpp"
#include "engine/server/cluster_peers.hpp"
#include "reprise/v1/service.grpc.pb.h"

namespace reprise::engine {

// Our Status codes are gRPC's, number for number.
grpc::Status to_grpc_status(const Status& status);

class GrpcService final : public v1::WorkflowService::CallbackService {
 public:
  // Uploads larger than `blob_limit` bytes are refused. `auth` outlives the
  // service. `peers`: how requests are forwarded to the other nodes of a
  // cluster.
  GrpcService(Engine& engine, BlobStore& blobs, int64_t blob_limit, const ApiKeyAuth& auth,
              ClusterPeers::Transport peers)
      : engine_(engine), blobs_(blobs), blob_limit_(blob_limit), auth_(auth), peers_(std::move(peers)) {}
  // Waits for every payload stream to end (see Lifetime above).
  ~GrpcService() override;
  GrpcService(const GrpcService&) = delete;
  GrpcService& operator=(const GrpcService&) = delete;
  // The address this node announces to the others of its cluster ("" for
  // none), which requests it forwards carry (cluster_peers.hpp).
  void set_own_address(std::string address) { peers_.set_own_address(std::move(address)); }

  // Held by each payload stream's reactor from its creation until it is
  // destroyed; the service's destructor waits for none. Thread safety: any
  // thread.
  class StreamRef {
   public:
    explicit StreamRef(GrpcService& service);
    ~StreamRef();
    StreamRef(const StreamRef&) = delete;
    StreamRef& operator=(const StreamRef&) = delete;

   private:
    GrpcService& service_;
  };

  grpc::ServerUnaryReactor* StartWorkflow(grpc::CallbackServerContext* c, const v1::StartWorkflowRequest* q,
                                          v1::StartWorkflowResponse* r) override;
  grpc::ServerUnaryReactor* SignalWorkflow(grpc::CallbackServerContext* c, const v1::SignalWorkflowRequest* q,
                                           v1::SignalWorkflowResponse* r) override;
  grpc::ServerUnaryReactor* SignalWithStart(grpc::CallbackServerContext* c, const v1::SignalWithStartRequest* q,
                                            v1::StartWorkflowResponse* r) override;
  grpc::ServerUnaryReactor* QueryWorkflow(grpc::CallbackServerContext* c, const v1::QueryWorkflowRequest* q,
                                          v1::QueryWorkflowResponse* r) override;
  grpc::ServerUnaryReactor* RequestCancelWorkflow(grpc::CallbackServerContext* c,
                                                  const v1::RequestCancelWorkflowRequest* q,
                                                  v1::RequestCancelWorkflowResponse* r) override;
  grpc::ServerUnaryReactor* TerminateWorkflow(grpc::CallbackServerContext* c, const v1::TerminateWorkflowRequest* q,
                                              v1::TerminateWorkflowResponse* r) override;
  grpc::ServerUnaryReactor* DeleteWorkflowExecution(grpc::CallbackServerContext* c,
                                                    const v1::DeleteWorkflowExecutionRequest* q,
                                                    v1::DeleteWorkflowExecutionResponse* r) override;
  grpc::ServerUnaryReactor* DescribeWorkflow(grpc::CallbackServerContext* c, const v1::DescribeWorkflowRequest* q,
                                             v1::DescribeWorkflowResponse* r) override;
  grpc::ServerUnaryReactor* GetHistory(grpc::CallbackServerContext* c, const v1::GetHistoryRequest* q,
                                       v1::GetHistoryResponse* r) override;
  grpc::ServerUnaryReactor* ListWorkflows(grpc::CallbackServerContext* c, const v1::ListWorkflowsRequest* q,
                                          v1::ListWorkflowsResponse* r) override;
  grpc::ServerWriteReactor<v1::GetPayloadChunk>* GetPayload(grpc::CallbackServerContext* c,
                                                            const v1::GetPayloadRequest* q) override;
  grpc::ServerReadReactor<v1::PutPayloadChunk>* PutPayload(grpc::CallbackServerContext* c,
                                                           v1::PutPayloadResponse* r) override;
  grpc::ServerUnaryReactor* Health(grpc::CallbackServerContext* c, const v1::HealthRequest* q,
                                   v1::HealthResponse* r) override;
  grpc::ServerUnaryReactor* GetStorageStats(grpc::CallbackServerContext* c, const v1::GetStorageStatsRequest* q,
                                            v1::GetStorageStatsResponse* r) override;
  grpc::ServerUnaryReactor* RegisterNamespace(grpc::CallbackServerContext* c, const v1::RegisterNamespaceRequest* q,
                                              v1::RegisterNamespaceResponse* r) override;
  grpc::ServerUnaryReactor* DescribeNamespace(grpc::CallbackServerContext* c, const v1::DescribeNamespaceRequest* q,
                                              v1::DescribeNamespaceResponse* r) override;
  grpc::ServerUnaryReactor* ListNamespaces(grpc::CallbackServerContext* c, const v1::ListNamespacesRequest* q,
                                           v1::ListNamespacesResponse* r) override;
  grpc::ServerUnaryReactor* UpdateNamespace(grpc::CallbackServerContext* c, const v1::UpdateNamespaceRequest* q,
                                            v1::UpdateNamespaceResponse* r) override;
  grpc::ServerUnaryReactor* PollWorkflowTask(grpc::CallbackServerContext* c, const v1::PollWorkflowTaskRequest* q,
                                             v1::PollWorkflowTaskResponse* r) override;
  grpc::ServerUnaryReactor* CompleteWorkflowTask(grpc::CallbackServerContext* c,
                                                 const v1::CompleteWorkflowTaskRequest* q,
                                                 v1::CompleteWorkflowTaskResponse* r) override;
  grpc::ServerUnaryReactor* FailWorkflowTask(grpc::CallbackServerContext* c, const v1::FailWorkflowTaskRequest* q,
                                             v1::FailWorkflowTaskResponse* r) override;
  grpc::ServerUnaryReactor* PollActivityTask(grpc::CallbackServerContext* c, const v1::PollActivityTaskRequest* q,
                                             v1::PollActivityTaskResponse* r) override;
  grpc::ServerUnaryReactor* HeartbeatActivity(grpc::CallbackServerContext* c, const v1::HeartbeatActivityRequest* q,
                                              v1::HeartbeatActivityResponse* r) override;
  grpc::ServerUnaryReactor* CompleteActivity(grpc::CallbackServerContext* c, const v1::CompleteActivityRequest* q,
                                             v1::CompleteActivityResponse* r) override;
  grpc::ServerUnaryReactor* FailActivity(grpc::CallbackServerContext* c, const v1::FailActivityRequest* q,
                                         v1::FailActivityResponse* r) override;
  grpc::ServerUnaryReactor* ReportActivityCanceled(grpc::CallbackServerContext* c,
                                                   const v1::ReportActivityCanceledRequest* q,
                                                   v1::ReportActivityCanceledResponse* r) override;

 private:
  // The call's authorization header ("" when it has none).
  static std::string_view authorization(const grpc::CallbackServerContext* context);
  // OK, or why `context`'s caller may not make call `what` in `namespace_id`.
  Status authorize(const grpc::CallbackServerContext* context, Roles roles, const std::string& namespace_id,
                   std::string_view what) const;
  // authorize() for a call that names its execution by task token.
  Status authorize_token(const grpc::CallbackServerContext* context, Roles roles, const std::string& task_token,
                         std::string_view what) const;
  // A reactor that answers `refused` at once.
  static grpc::ServerUnaryReactor* refuse(grpc::CallbackServerContext* context, const Status& refused);

  template <typename Req, typename Resp>
  grpc::ServerUnaryReactor* forward(grpc::CallbackServerContext* context, const Req* request, Resp* response,
                                    void (Engine::*method)(Req, Reply<Resp>), const Status& authorized);

  // A client-side WorkflowService method: what relaying a call runs.
  template <typename Req, typename Resp>
  using PeerCall = void (v1::WorkflowService::Stub::async::*)(grpc::ClientContext*, const Req*, Resp*,
                                                              std::function<void(grpc::Status)>);

  // forward(), or, when the execution's shard is served by the node at
  // `owner` (not "") and the call was not forwarded already, relay().
  template <typename Req, typename Resp>
  grpc::ServerUnaryReactor* route(grpc::CallbackServerContext* context, const Req* request, Resp* response,
                                  void (Engine::*method)(Req, Reply<Resp>), PeerCall<Req, Resp> peer_call,
                                  const Status& authorized, const std::string& owner);
  // What a call relayed to the node at `address` answers its caller, from
  // relay() and poll_owner() alike: an UNAVAILABLE names that node and
  // carries kRetryableTrailer (this node is up; the call may be sent again).
  static grpc::Status relayed_answer(grpc::CallbackServerContext* context, const grpc::Status& answer,
                                     const std::string& address);
  // Sends the call to the node at `address` and answers with its answer.
  template <typename Req, typename Resp>
  grpc::ServerUnaryReactor* relay(grpc::CallbackServerContext* context, const Req* request, Resp* response,
                                  PeerCall<Req, Resp> peer_call, const std::string& address);

  // A worker's poll: served here when this node owns its queue, else
  // relayed to the owner (canceled with the worker's call).
  template <typename Req, typename Resp>
  grpc::ServerUnaryReactor* poll_owner(grpc::CallbackServerContext* context, const Req* request, Resp* response,
                                       void (Engine::*method)(Req, Reply<Resp>, std::shared_ptr<PollTicket>),
                                       PeerCall<Req, Resp> peer_call, const Status& authorized);

  template <typename Req, typename Resp>
  grpc::ServerUnaryReactor* forward_poll(grpc::CallbackServerContext* context, const Req* request, Resp* response,
                                         void (Engine::*method)(Req, Reply<Resp>, std::shared_ptr<PollTicket>),
                                         const Status& authorized);

  Engine& engine_;
  BlobStore& blobs_;
  int64_t blob_limit_;
  const ApiKeyAuth& auth_;
  ClusterPeers peers_;
  std::mutex streams_mu_;
  std::condition_variable streams_cv_;
  int streams_ = 0;  // payload streams not yet destroyed
  // Runs the payload streams' blob store calls (each waits on SQLite).
  // Destroyed first (declared last): runs what is queued, then joins.
  Executor blob_io_{"blob-io", 4};
};

}  // namespace reprise::engine
