#include "engine/server/cluster_peers.hpp"

namespace reprise::engine {

bool ClusterPeers::forwarded(const grpc::CallbackServerContext* incoming) {
  return incoming->client_metadata().count(kForwardedHeader) != 0;
}

std::shared_ptr<grpc::ClientContext> ClusterPeers::context_for(const grpc::CallbackServerContext* incoming) {
  auto context = std::make_shared<grpc::ClientContext>();
  context->set_deadline(incoming->deadline());
  context->AddMetadata(kForwardedHeader, "1");
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

void ClusterPeers::keep_spare(const std::string& key, std::string task) {
  std::lock_guard lock(mu_);
  spares_[key].emplace_back(std::chrono::steady_clock::now(), std::move(task));
}

std::optional<std::string> ClusterPeers::take_spare(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = spares_.find(key);
  if (it == spares_.end()) return std::nullopt;
  auto& queue = it->second;
  const auto too_old = std::chrono::steady_clock::now() - kSpareAge;
  while (!queue.empty() && queue.front().first < too_old) queue.pop_front();
  std::optional<std::string> task;
  if (!queue.empty()) {
    task = std::move(queue.front().second);
    queue.pop_front();
  }
  if (queue.empty()) spares_.erase(it);
  return task;
}

}  // namespace reprise::engine
