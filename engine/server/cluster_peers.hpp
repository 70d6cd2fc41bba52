// ClusterPeers: how a node of a cluster reaches the others (docs/cluster.md,
// "Forwarding"): a gRPC stub per announced address, made at first use and
// kept, and the spare tasks of polls it fanned out.
//
// A request a node forwards carries kForwardedHeader and the caller's
// authorization header; the node it reaches authorizes it again and serves
// it itself, never forwarding it further (a shard that moved meanwhile is
// refused UNAVAILABLE, and the client tries again).
//
// A node that serves TLS forwards over TLS (server_tls.hpp,
// peer_transport): the channels are made with the Transport it is given,
// and ping the other node, so one that stops answering fails its calls
// UNAVAILABLE within seconds (keepalive.hpp).
//
// Thread safety: any thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/server/keepalive.hpp"
#include "reprise/v1/service.grpc.pb.h"

namespace reprise::engine {

class ClusterPeers {
 public:
  // How the channels to the other nodes are made.
  struct Transport {
    std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
    // The name the other nodes' certificates must carry, when it is not the
    // host of their announced address; "" checks that host.
    std::string server_name;
    // The pings on these channels.
    PeerKeepalive keepalive;

    // A channel to the node at `address` (host:port), made so: pinged as
    // `keepalive` says (keepalive.hpp), messages up to 64 MiB.
    std::shared_ptr<grpc::Channel> channel(const std::string& address) const;
  };

  explicit ClusterPeers(Transport transport) : transport_(std::move(transport)) {}

  static constexpr const char* kForwardedHeader = "reprise-forwarded";
  // How long a spare task waits for a poll before it is left to its
  // timeout: well under any task timeout.
  static constexpr std::chrono::milliseconds kSpareAge{2000};

  // Whether `incoming` was forwarded by another node.
  static bool forwarded(const grpc::CallbackServerContext* incoming);
  // A context for forwarding `incoming`: its deadline, its authorization,
  // the forwarded mark.
  static std::shared_ptr<grpc::ClientContext> context_for(const grpc::CallbackServerContext* incoming);

  // The stub for the node at `address` (host:port).
  v1::WorkflowService::Stub& stub(const std::string& address);

  // A task a fanned-out poll got after it had already answered (two nodes
  // handed one out at once): kept for the next poll of the same queue
  // (`key`: the poll's kind, namespace and queue), for kSpareAge.
  void keep_spare(const std::string& key, std::string task);
  std::optional<std::string> take_spare(const std::string& key);

 private:
  const Transport transport_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<v1::WorkflowService::Stub>> stubs_;
  std::map<std::string, std::deque<std::pair<std::chrono::steady_clock::time_point, std::string>>> spares_;
};

}  // namespace reprise::engine
