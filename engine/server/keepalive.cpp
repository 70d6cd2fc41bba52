#include "engine/server/keepalive.hpp"

namespace reprise::engine {

void accept_keepalive_pings(grpc::ServerBuilder& builder) {
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             static_cast<int>(kMinPingInterval.count()));
  // Also on a connection with no call in flight: the SDK and the nodes
  // ping only during calls, but other gRPC clients may ping between them.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
}

void ping_peer(grpc::ChannelArguments& args, const PeerKeepalive& keepalive) {
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, static_cast<int>(keepalive.interval.count()));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, static_cast<int>(keepalive.timeout.count()));
  // During calls only, as the SDK (sdk/src/connection.cpp): an idle
  // connection has nothing to lose, and its next call pings.
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
  // gRPC stops pinging after two pings with no data sent in between unless
  // told otherwise: a fanned-out poll that waits in silence would then
  // stop being watched.
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
}

}  // namespace reprise::engine
