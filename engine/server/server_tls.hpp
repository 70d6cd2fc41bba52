// reprise-server's transport security: TLS on the gRPC port (--tls-cert,
// --tls-key), client certificates verified against a CA (--tls-client-ca,
// mutual TLS), and the refusals to serve beyond loopback in plaintext or to
// callers it cannot tell apart (no API keys, no client certificates) without
// --insecure; and how the node forwards to the other nodes of a cluster.
// Thread rule: main thread, before the server starts.
#pragma once

#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>

#include "engine/server/cluster_peers.hpp"
#include "history/status.hpp"

namespace reprise::engine {

struct TlsFlags {
  std::string cert_file;       // PEM certificate chain; "" = plaintext
  std::string key_file;        // PEM private key of cert_file
  std::string client_ca_file;  // PEM CA bundle; set: every client must present a certificate it signed
  bool insecure = false;       // plaintext on an address other than loopback, knowingly
  // Forwarding to the other nodes of a cluster, over TLS when cert_file is
  // set: the PEM CA bundle their certificates are checked against ("" = the
  // system's roots), and the name they carry ("" = the host of each node's
  // announced address).
  std::string peer_ca_file;
  std::string peer_server_name;
};

// The credentials to listen on `listen` with. Plaintext on a loopback
// address (127.0.0.0/8, ::1, localhost) is fine; plaintext anywhere else is
// refused (FAILED_PRECONDITION naming --tls-cert and --insecure) unless
// `insecure`. A file that cannot be read, or that holds no PEM block of the
// kind expected, is INVALID_ARGUMENT naming the flag and the file.
Result<std::shared_ptr<grpc::ServerCredentials>> server_credentials(const TlsFlags& tls, const std::string& listen);

// How this node reaches the other nodes of its cluster when it forwards a
// request: plaintext when it serves plaintext; when it serves TLS, over TLS,
// checking their certificates against peer_ca_file (else the system's roots)
// for peer_server_name (else the host of their announced address), and
// presenting its own certificate and key, for nodes that require client
// certificates (so a node's certificate must then allow client use too). A
// --tls-peer-ca that cannot be read or holds no certificate is
// INVALID_ARGUMENT naming the flag and the file.
Result<ClusterPeers::Transport> peer_transport(const TlsFlags& tls);

// Beyond loopback a server must know its callers: by API key (any defined)
// or by client certificate (--tls-client-ca). FAILED_PRECONDITION naming
// `reprise admin key create` and --insecure otherwise, unless `insecure`.
Status check_callers_known(const TlsFlags& tls, const std::string& listen, bool api_keys_defined);

// "host" of "host:port" ("[::1]:7233" gives "::1").
std::string listen_host(const std::string& listen);
bool is_loopback_host(const std::string& host);

}  // namespace reprise::engine
