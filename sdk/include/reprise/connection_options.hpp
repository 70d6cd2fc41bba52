// ConnectionOptions: how Connection::remote reaches a reprise-server: over
// TLS or not, with which API key, in which namespace.
//
//   reprise::ConnectionOptions options;
//   options.api_key = "rpk_...";          // from `reprise admin key create`
//   options.namespace_name = "payments";  // registered with `reprise namespace create`
//   auto connection = reprise::Connection::remote("reprise.internal:7233", options);
//
// A plain value: copy it freely; no thread rule.
#pragma once

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

  // TLS from TlsOptions::from_environment(), the key from REPRISE_API_KEY
  // and the namespace from REPRISE_NAMESPACE. Throws as
  // TlsOptions::from_files does.
  static ConnectionOptions from_environment();
};

}  // namespace reprise
