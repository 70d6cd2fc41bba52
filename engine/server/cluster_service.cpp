#include "engine/server/cluster_service.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "engine/server/grpc_service.hpp"
#include "engine/thread_name.hpp"

namespace reprise::engine {

namespace {

// A call to another node: its deadline and the forwarded mark.
template <typename Req, typename Resp>
struct InternalCall {
  grpc::ClientContext context;
  Req request;
  Resp response;
  explicit InternalCall(const Req& r) : request(r) {
    context.set_deadline(std::chrono::system_clock::now() + InternalPeers::kCallDeadline);
    context.AddMetadata(ClusterPeers::kForwardedHeader, "1");
  }
};

Status from_grpc(const grpc::Status& s) { return Status(static_cast<StatusCode>(s.error_code()), s.error_message()); }

// The fault point kHoldApply: its directory, or nullptr when unset.
const char* hold_directory() {
  static const char* const dir = std::getenv(ClusterInternalService::kHoldApply);
  return dir;
}

bool file_exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

}  // namespace

grpc::ServerUnaryReactor* ClusterInternalService::ApplyTransfer(grpc::CallbackServerContext* context,
                                                                const internal::RemoteTransfer* request,
                                                                internal::RemoteTransferOutcome* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (const char* dir = hold_directory(); dir != nullptr && !file_exists(std::string(dir) + "/release")) {
    // Held on a thread of its own: a gRPC thread must not block. The call
    // keeps the server's shutdown waiting until it is let go.
    std::ofstream(std::string(dir) + "/held", std::ios::app)
        << internal::TransferTask::Kind_Name(request->task().kind()) << ' ' << request->source().workflow_id()
        << std::endl;
    std::thread([this, reactor, response, request = *request, release = std::string(dir) + "/release"]() mutable {
      name_this_thread("held-transfer");
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(1);
      while (!file_exists(release) && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      apply(std::move(request), reactor, response);
    }).detach();
    return reactor;
  }
  apply(*request, reactor, response);
  return reactor;
}

void ClusterInternalService::apply(internal::RemoteTransfer request, grpc::ServerUnaryReactor* reactor,
                                   internal::RemoteTransferOutcome* response) {
  engine_.apply_remote_transfer(std::move(request),
                                [reactor, response](Result<internal::RemoteTransferOutcome> outcome) {
                                  if (!outcome) return reactor->Finish(to_grpc_status(outcome.status()));
                                  *response = std::move(*outcome);
                                  reactor->Finish(grpc::Status::OK);
                                });
}

grpc::ServerUnaryReactor* ClusterInternalService::AddTasks(grpc::CallbackServerContext* context,
                                                           const internal::QueuedTasks* request,
                                                           internal::QueuedTasksAdded* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  engine_.add_queued_tasks(*request, [reactor, response](Result<internal::QueuedTasksAdded> added) {
    if (!added) return reactor->Finish(to_grpc_status(added.status()));
    *response = std::move(*added);
    reactor->Finish(grpc::Status::OK);
  });
  return reactor;
}

grpc::ServerUnaryReactor* ClusterInternalService::StartTask(grpc::CallbackServerContext* context,
                                                            const internal::StartTaskRequest* request,
                                                            internal::StartedTask* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  engine_.start_queued_task(*request, [reactor, response](Result<internal::StartedTask> started) {
    if (!started) return reactor->Finish(to_grpc_status(started.status()));
    *response = std::move(*started);
    reactor->Finish(grpc::Status::OK);
  });
  return reactor;
}

bool InternalPeers::kill_after_remote_apply() {
  static const bool set = std::getenv(kKillAfterRemoteApply) != nullptr;
  return set;
}

internal::ClusterService::Stub& InternalPeers::stub(const std::string& address) {
  std::lock_guard lock(mu_);
  std::unique_ptr<internal::ClusterService::Stub>& stub = stubs_[address];
  if (!stub) stub = internal::ClusterService::NewStub(transport_.channel(address));
  return *stub;
}

void InternalPeers::apply(const std::string& address, const internal::RemoteTransfer& request,
                          TransferPeers::Done done) {
  auto call = std::make_shared<InternalCall<internal::RemoteTransfer, internal::RemoteTransferOutcome>>(request);
  stub(address).async()->ApplyTransfer(&call->context, &call->request, &call->response,
                                       [call, done = std::move(done)](const grpc::Status& s) {
                                         if (!s.ok()) return done(from_grpc(s));
                                         if (kill_after_remote_apply()) ::raise(SIGKILL);
                                         done(std::move(call->response));
                                       });
}

void InternalPeers::add(const std::string& address, const internal::QueuedTasks& tasks, Added done) {
  auto call = std::make_shared<InternalCall<internal::QueuedTasks, internal::QueuedTasksAdded>>(tasks);
  stub(address).async()->AddTasks(
      &call->context, &call->request, &call->response,
      [call, done = std::move(done)](const grpc::Status& s) { done(s.ok() ? Status::ok() : from_grpc(s)); });
}

void InternalPeers::start(const std::string& address, const internal::StartTaskRequest& request, Started done) {
  auto call = std::make_shared<InternalCall<internal::StartTaskRequest, internal::StartedTask>>(request);
  stub(address).async()->StartTask(&call->context, &call->request, &call->response,
                                   [call, done = std::move(done)](const grpc::Status& s) {
                                     if (!s.ok()) return done(from_grpc(s));
                                     done(std::move(call->response));
                                   });
}

}  // namespace reprise::engine
