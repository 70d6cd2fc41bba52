// Keepalive pings on reprise-server's connections (docs/cluster.md, "A node
// that stops answering"). A node that stops answering on a connection that
// is up (paused, or cut off by a partition that drops packets rather than
// refusing them) sends no reset: without pings, the calls on that
// connection wait for their deadlines. A ping that is not answered in time
// closes the connection, and its calls fail UNAVAILABLE, which the SDK, the
// CLI and a forwarding node take as "try another node".
//
// Two sides, set here so they agree:
// - the pings this server accepts from its callers (the SDK's channels,
//   other nodes'): as often as every kMinPingInterval on a connection, also
//   with no call in flight; a caller that pings more often is sent GOAWAY
//   (too_many_pings) after gRPC's default two strikes;
// - the pings a node sends on its own channels to the other nodes
//   (forwarding, fanned-out polls, transfer tasks) while a call is in
//   flight: every PeerKeepalive::interval of quiet, the connection closed
//   when one is not answered within PeerKeepalive::timeout
//   (--peer-keepalive-interval, --peer-keepalive-timeout). A client's call
//   that a node forwards to a node that stops answering is found by these,
//   not by the client's own pings, which see a node that answers.
//
// Thread rule: main thread, before the server and the channels are built.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>

namespace reprise::engine {

// Half the shortest interval the SDK lets a connection ping at
// (ConnectionOptions::keepalive_interval, at least 1 s), so that timer
// jitter never makes an allowed ping a strike. A ping costs a 17-byte frame
// and its answer: accepting two a second from a caller costs nothing
// noticeable, and refusing faster ones still stops a runaway client.
inline constexpr std::chrono::milliseconds kMinPingInterval{500};
// A node's pings to the other nodes. By default what the SDK uses, for the
// same reasons (docs/cluster.md): a peer that stops answering is found
// within 15 s, well inside a forwarded call's 30 s, at one ping per 10 s of
// quiet per connection. Each between kMinPeerKeepalive and kMaxPeerKeepalive.
struct PeerKeepalive {
  std::chrono::milliseconds interval{10'000};
  std::chrono::milliseconds timeout{5'000};
};
// The SDK's bounds (ConnectionOptions::keepalive_interval): twice
// kMinPingInterval, so the other nodes take every ping; gRPC's timers hold
// no more than 24 h.
inline constexpr std::chrono::milliseconds kMinPeerKeepalive{1'000};
inline constexpr std::chrono::milliseconds kMaxPeerKeepalive{24 * 3'600'000};

// The server side: accept keepalive pings from callers (see above).
void accept_keepalive_pings(grpc::ServerBuilder& builder);
// A channel to another node: ping it (see above).
void ping_peer(grpc::ChannelArguments& args, const PeerKeepalive& keepalive);

}  // namespace reprise::engine
