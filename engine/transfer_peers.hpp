// TransferPeers: how the engine reaches the node that serves another shard,
// to apply there the target side of a transfer task whose source this node
// serves (docs/cluster.md, "Transfer tasks across shards"). The server
// implements it over gRPC (engine/server/cluster_service.hpp); an engine
// without one retries such tasks until it serves both shards itself.
//
// Thread safety: apply() from any thread; `done` runs once, on a thread of
// the implementation's, and must not block.
#pragma once

#include <functional>
#include <string>

#include "history/status.hpp"
#include "reprise/internal/cluster.pb.h"

namespace reprise::engine {

class TransferPeers {
 public:
  using Done = std::function<void(Result<internal::RemoteTransferOutcome>)>;
  virtual ~TransferPeers() = default;
  // Asks the node at `address` (host:port) to apply `request`.
  virtual void apply(const std::string& address, const internal::RemoteTransfer& request, Done done) = 0;
};

}  // namespace reprise::engine
