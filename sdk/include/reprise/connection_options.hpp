// ConnectionOptions: how Connection::remote reaches a reprise-server: over
// TLS or not, with which API key, in which namespace, and how soon a node
// that stops answering is given up.
//
//   reprise::ConnectionOptions options;
//   options.api_key = "rpk_...";          // from `reprise admin key create`
//   options.namespace_name = "payments";  // registered with `reprise namespace create`
//   auto connection = reprise::Connection::remote("reprise.internal:7233", options);
//
// A plain value: copy it freely; no thread rule.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "reprise/export.hpp"
#include "reprise/tls.hpp"

namespace reprise {

struct REPRISE_EXPORT ConnectionOptions {
  std::optional<TlsOptions> tls;  // nothing: plaintext
  // Sent as "authorization: Bearer <api_key>" with every call; "" sends
  // none. A server that has keys refuses calls without one (RpcError
  // UNAUTHENTICATED), and calls the key's roles or namespaces do not allow
  // (PERMISSION_DENIED).
  std::string api_key;
  // The namespace of every request this connection sends that names none
  // (the client's and the worker's); "" is the server's 'default'.
  std::string namespace_name;
  // Keepalive pings on each connection to a node while a call is in
  // flight (a worker's poll included): after keepalive_interval without a
  // frame from the node a ping goes out, and when it is not answered within
  // keepalive_timeout the connection is closed: its calls fail UNAVAILABLE,
  // so with several addresses they go to the next node. This is what finds
  // a node that stops answering on a connection already up (paused, or cut
  // off by a network that drops packets rather than refusing them), which
  // otherwise holds the calls until their timeouts (30 s; a worker's poll,
  // 70 s). The defaults find one within 15 s, at one ping per 10 s of quiet
  // per connection. Measured, a node stopped with SIGSTOP: with the
  // defaults a call on it came back after 15.2 s, with 1 s + 3 s
  // after 4.2-4.4 s. A call that a live node of a cluster forwards to the
  // stopped one is found by the nodes' own pings instead
  // (reprise-server --peer-keepalive-interval, --peer-keepalive-timeout;
  // the same defaults): with them set as the client's it came back after
  // about the same time (docs/cluster.md, "A node that stops answering").
  // Each at least 1 s (the server refuses pings more often than every
  // 500 ms); less is refused with reprise::Error.
  std::chrono::milliseconds keepalive_interval = std::chrono::seconds(10);
  std::chrono::milliseconds keepalive_timeout = std::chrono::seconds(5);

  // TLS from TlsOptions::from_environment(), the key from REPRISE_API_KEY
  // and the namespace from REPRISE_NAMESPACE. Throws as
  // TlsOptions::from_files does.
  static ConnectionOptions from_environment();
};

}  // namespace reprise
