// What the nodes of a cluster ask each other over
// reprise.internal.ClusterService (docs/cluster.md): the target side of a
// transfer task ("Transfer tasks across shards"), and a worker queue's tasks
// handed to the queue's owner and started by their shard's node ("Task
// queues"). ClusterInternalService answers those calls with this node's
// engine; InternalPeers makes them, a stub per node address, for the engine
// (its TransferPeers and TaskQueuePeers). Each call carries its own
// credential (a token signed with the cluster's key), so API keys play no
// part; it goes over TLS like forwarding when the node serves TLS, and is
// marked forwarded like a relayed request and never relayed further (the
// engine refuses UNAVAILABLE when a shard moved meanwhile).
//
// Thread safety: any thread. Lifetime: ClusterInternalService as
// GrpcService (after the grpc::Server, before the Engine); InternalPeers
// outlives the engine that holds it (the engine's options share it).
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "engine/engine.hpp"
#include "engine/server/cluster_peers.hpp"
#include "engine/task_queue_peers.hpp"
#include "engine/transfer_peers.hpp"
#include "reprise/internal/cluster.grpc.pb.h"

namespace reprise::engine {

class ClusterInternalService final : public internal::ClusterService::CallbackService {
 public:
  explicit ClusterInternalService(Engine& engine) : engine_(engine) {}
  // A fault point for tests (tests/cluster/transfer_test.cpp): with this
  // environment variable set to a directory, the node holds every
  // ApplyTransfer it receives, having appended a line to DIR/held (the
  // task's kind and its source's workflow id), until the file DIR/release
  // exists (at most a minute), then applies it; the caller's call stays in
  // flight meanwhile.
  static constexpr const char* kHoldApply = "REPRISE_FAULT_HOLD_APPLY_TRANSFER";
  grpc::ServerUnaryReactor* ApplyTransfer(grpc::CallbackServerContext* context, const internal::RemoteTransfer* request,
                                          internal::RemoteTransferOutcome* response) override;
  grpc::ServerUnaryReactor* AddTasks(grpc::CallbackServerContext* context, const internal::QueuedTasks* request,
                                     internal::QueuedTasksAdded* response) override;
  grpc::ServerUnaryReactor* StartTask(grpc::CallbackServerContext* context, const internal::StartTaskRequest* request,
                                      internal::StartedTask* response) override;

 private:
  void apply(internal::RemoteTransfer request, grpc::ServerUnaryReactor* reactor,
             internal::RemoteTransferOutcome* response);

  Engine& engine_;
};

class InternalPeers final : public TransferPeers, public TaskQueuePeers {
 public:
  // Channels are made as forwarding makes them (over TLS when this node
  // serves TLS).
  explicit InternalPeers(ClusterPeers::Transport transport) : transport_(std::move(transport)) {}
  // How long one attempt may take before the transfer task is retried, or
  // a hand-over of tasks or a start fails.
  static constexpr std::chrono::seconds kCallDeadline{10};
  // A fault point for tests (tests/cluster/transfer_test.cpp): with this
  // environment variable set, the process kills itself (SIGKILL) as soon as
  // another node has applied one of its transfers, before it records that.
  static constexpr const char* kKillAfterRemoteApply = "REPRISE_FAULT_KILL_AFTER_REMOTE_TRANSFER";

  void apply(const std::string& address, const internal::RemoteTransfer& request, TransferPeers::Done done) override;
  void add(const std::string& address, const internal::QueuedTasks& tasks, Added done) override;
  void start(const std::string& address, const internal::StartTaskRequest& request, Started done) override;

 private:
  internal::ClusterService::Stub& stub(const std::string& address);
  static bool kill_after_remote_apply();

  const ClusterPeers::Transport transport_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<internal::ClusterService::Stub>> stubs_;
};

}  // namespace reprise::engine
