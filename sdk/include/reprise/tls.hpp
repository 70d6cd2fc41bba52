// TlsOptions: how a client or worker connects to a reprise-server that
// serves TLS (reprise-server --tls-cert/--tls-key), and the certificate it
// presents to one that requires client certificates (--tls-client-ca).
//
//   auto tls = reprise::TlsOptions::from_files("ca.pem", "worker.pem", "worker.key");
//   auto connection = reprise::Connection::remote("reprise.internal:7233", tls);
//
// A plain value: copy it freely; no thread rule.
#pragma once

#include <optional>
#include <string>

#include "reprise/export.hpp"

namespace reprise {

struct REPRISE_EXPORT TlsOptions {
  // PEM CA certificates that sign the server's certificate; "" trusts the
  // system's roots.
  std::string server_ca_pem;
  // A PEM certificate chain and its private key, for a server that requires
  // client certificates; both or neither.
  std::string client_cert_pem;
  std::string client_key_pem;
  // The name the server's certificate must carry, when it differs from the
  // address's host (connecting by IP to a certificate issued for a name).
  std::string server_name;

  // Reads the PEM files ("" leaves that part empty). Throws reprise::Error
  // naming a file that cannot be read.
  static TlsOptions from_files(const std::string& server_ca_file, const std::string& client_cert_file = "",
                               const std::string& client_key_file = "", const std::string& server_name = "");
  // From REPRISE_TLS_CA, REPRISE_TLS_CERT, REPRISE_TLS_KEY and
  // REPRISE_TLS_SERVER_NAME (file paths, and a name); nothing when none is
  // set. Throws as from_files does.
  static std::optional<TlsOptions> from_environment();
};

}  // namespace reprise
