// reprise-server's transport security: TLS on the gRPC port (--tls-cert,
// --tls-key), client certificates verified against a CA (--tls-client-ca,
// mutual TLS), and the refusals to serve beyond loopback in plaintext or to
// callers it cannot tell apart (no API keys, no client certificates) without
// --insecure. Thread rule: main thread, before the server starts.
#pragma once

#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>

#include "history/status.hpp"

namespace reprise::engine {

struct TlsFlags {
  std::string cert_file;       // PEM certificate chain; "" = plaintext
  std::string key_file;        // PEM private key of cert_file
  std::string client_ca_file;  // PEM CA bundle; set: every client must present a certificate it signed
  bool insecure = false;       // plaintext on an address other than loopback, knowingly
};

// The credentials to listen on `listen` with. Plaintext on a loopback
// address (127.0.0.0/8, ::1, localhost) is fine; plaintext anywhere else is
// refused (FAILED_PRECONDITION naming --tls-cert and --insecure) unless
// `insecure`. A file that cannot be read, or that holds no PEM block of the
// kind expected, is INVALID_ARGUMENT naming the flag and the file.
Result<std::shared_ptr<grpc::ServerCredentials>> server_credentials(const TlsFlags& tls, const std::string& listen);

// Beyond loopback a server must know its callers: by API key (any defined)
// or by client certificate (--tls-client-ca). FAILED_PRECONDITION naming
// `reprise admin key create` and --insecure otherwise, unless `insecure`.
Status check_callers_known(const TlsFlags& tls, const std::string& listen, bool api_keys_defined);

// "host" of "host:port" ("[::1]:7233" gives "::1").
std::string listen_host(const std::string& listen);
bool is_loopback_host(const std::string& host);

}  // namespace reprise::engine
