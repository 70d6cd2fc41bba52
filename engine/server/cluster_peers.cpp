#include "engine/server/cluster_peers.hpp"

namespace reprise::engine {

bool ClusterPeers::forwarded(const grpc::CallbackServerContext* incoming) {
  return incoming->client_metadata().count(kForwardedHeader) != 0;
}

std::string ClusterPeers::forwarded_from(const grpc::CallbackServerContext* incoming) {
  const auto& metadata = incoming->client_metadata();
  auto it = metadata.find(kForwardedFromHeader);
  return it == metadata.end() ? std::string() : std::string(it->second.data(), it->second.size());
}

std::shared_ptr<grpc::ClientContext> ClusterPeers::context_for(const grpc::CallbackServerContext* incoming) {
  auto context = std::make_shared<grpc::ClientContext>();
  context->set_deadline(incoming->deadline());
  context->AddMetadata(kForwardedHeader, "1");
  {
    std::lock_guard lock(mu_);
    if (!own_address_.empty()) context->AddMetadata(kForwardedFromHeader, own_address_);
  }
  const auto& metadata = incoming->client_metadata();
  if (auto it = metadata.find("authorization"); it != metadata.end()) {
    context->AddMetadata("authorization", std::string(it->second.data(), it->second.size()));
  }
  return context;
}

std::shared_ptr<grpc::Channel> ClusterPeers::Transport::channel(const std::string& address) const {
  grpc::ChannelArguments args;
  if (!server_name.empty()) args.SetSslTargetNameOverride(server_name);
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  ping_peer(args, keepalive);
  return grpc::CreateCustomChannel(address, credentials, args);
}

v1::WorkflowService::Stub& ClusterPeers::stub(const std::string& address) {
  std::lock_guard lock(mu_);
  std::unique_ptr<v1::WorkflowService::Stub>& stub = stubs_[address];
  if (!stub) stub = v1::WorkflowService::NewStub(transport_.channel(address));
  return *stub;
}

void ClusterPeers::set_own_address(std::string address) {
  std::lock_guard lock(mu_);
  own_address_ = std::move(address);
}

}  // namespace reprise::engine
