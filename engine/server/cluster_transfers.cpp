#include "engine/server/cluster_transfers.hpp"

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

// The fault point kHoldApply: its directory, or nullptr when unset.
const char* hold_directory() {
  static const char* const dir = std::getenv(ClusterTransferService::kHoldApply);
  return dir;
}

bool file_exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

}  // namespace

grpc::ServerUnaryReactor* ClusterTransferService::ApplyTransfer(grpc::CallbackServerContext* context,
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

void ClusterTransferService::apply(internal::RemoteTransfer request, grpc::ServerUnaryReactor* reactor,
                                   internal::RemoteTransferOutcome* response) {
  engine_.apply_remote_transfer(std::move(request),
                                [reactor, response](Result<internal::RemoteTransferOutcome> outcome) {
                                  if (!outcome) return reactor->Finish(to_grpc_status(outcome.status()));
                                  *response = std::move(*outcome);
                                  reactor->Finish(grpc::Status::OK);
                                });
}

bool GrpcTransferPeers::kill_after_remote_apply() {
  static const bool set = std::getenv(kKillAfterRemoteApply) != nullptr;
  return set;
}

internal::ClusterService::Stub& GrpcTransferPeers::stub(const std::string& address) {
  std::lock_guard lock(mu_);
  std::unique_ptr<internal::ClusterService::Stub>& stub = stubs_[address];
  if (!stub) stub = internal::ClusterService::NewStub(transport_.channel(address));
  return *stub;
}

void GrpcTransferPeers::apply(const std::string& address, const internal::RemoteTransfer& request, Done done) {
  struct Call {
    grpc::ClientContext context;
    internal::RemoteTransfer request;
    internal::RemoteTransferOutcome response;
  };
  auto call = std::make_shared<Call>();
  call->request = request;
  call->context.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
  call->context.AddMetadata(ClusterPeers::kForwardedHeader, "1");
  stub(address).async()->ApplyTransfer(
      &call->context, &call->request, &call->response, [call, done = std::move(done)](const grpc::Status& s) {
        if (!s.ok()) {
          return done(Status(static_cast<StatusCode>(s.error_code()), s.error_message()));
        }
        if (kill_after_remote_apply()) ::raise(SIGKILL);
        done(std::move(call->response));
      });
}

}  // namespace reprise::engine
