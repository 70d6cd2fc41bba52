// ClusterPeers: how a node of a cluster reaches the others (docs/cluster.md,
// "Forwarding"): a gRPC stub per announced address, made at first use and
// kept.
//
// A request a node forwards carries kForwardedHeader and the caller's
// authorization header; the node it reaches authorizes it again and serves
// it itself, never forwarding it further (a shard that moved meanwhile is
// refused UNAVAILABLE, and the client tries again), and kForwardedFromHeader,
// the forwarding node's own address (a worker's sticky queue lives on the
// node it completes its workflow tasks through: docs/cluster.md, "Task
// queues").
//
// A node that serves TLS forwards over TLS (server_tls.hpp,
// peer_transport): the channels are made with the Transport it is given,
// and ping the other node, so one that stops answering fails its calls
// UNAVAILABLE within seconds (keepalive.hpp).
//
// Thread safety: any thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>
#include <mutex>
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
  static constexpr const char* kForwardedFromHeader = "reprise-forwarded-from";

  // Whether `incoming` was forwarded by another node.
  static bool forwarded(const grpc::CallbackServerContext* incoming);
  // The address of the node that forwarded `incoming`; "" when it came
  // straight from its caller.
  static std::string forwarded_from(const grpc::CallbackServerContext* incoming);
  // A context for forwarding `incoming`: its deadline, its authorization,
  // the forwarded mark and this node's address.
  std::shared_ptr<grpc::ClientContext> context_for(const grpc::CallbackServerContext* incoming);

  // The stub for the node at `address` (host:port).
  v1::WorkflowService::Stub& stub(const std::string& address);

  // The address this node announces (known once it listens).
  void set_own_address(std::string address);

 private:
  const Transport transport_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<v1::WorkflowService::Stub>> stubs_;
  std::string own_address_;
};

}  // namespace reprise::engine
