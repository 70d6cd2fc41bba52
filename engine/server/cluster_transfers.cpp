#include "engine/server/cluster_transfers.hpp"

#include <signal.h>

#include <cstdlib>

#include "engine/server/grpc_service.hpp"

namespace reprise::engine {

grpc::ServerUnaryReactor* ClusterTransferService::ApplyTransfer(grpc::CallbackServerContext* context,
                                                                const internal::RemoteTransfer* request,
                                                                internal::RemoteTransferOutcome* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  engine_.apply_remote_transfer(*request, [reactor, response](Result<internal::RemoteTransferOutcome> outcome) {
    if (!outcome) return reactor->Finish(to_grpc_status(outcome.status()));
    *response = std::move(*outcome);
    reactor->Finish(grpc::Status::OK);
  });
  return reactor;
}

bool GrpcTransferPeers::kill_after_remote_apply() {
  static const bool set = std::getenv(kKillAfterRemoteApply) != nullptr;
  return set;
}

internal::ClusterService::Stub& GrpcTransferPeers::stub(const std::string& address) {
  std::lock_guard lock(mu_);
  std::unique_ptr<internal::ClusterService::Stub>& stub = stubs_[address];
  if (!stub) {
    grpc::ChannelArguments args;
    if (!transport_.server_name.empty()) args.SetSslTargetNameOverride(transport_.server_name);
    args.SetMaxReceiveMessageSize(64 << 20);
    args.SetMaxSendMessageSize(64 << 20);
    stub = internal::ClusterService::NewStub(grpc::CreateCustomChannel(address, transport_.credentials, args));
  }
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
