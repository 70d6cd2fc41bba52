#include "engine/server/server_tls.hpp"

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <iterator>

namespace reprise::engine {

namespace {

// The file's text, which must hold a PEM block beginning `-----BEGIN <kind>`
// (a kind of "" takes any block).
Result<std::string> read_pem(const std::string& flag, const std::string& path, const std::string& kind) {
  std::ifstream in(path);
  if (!in) return Status::invalid_argument(flag + " " + path + ": cannot be read");
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (text.find("-----BEGIN " + kind) == std::string::npos) {
    return Status::invalid_argument(flag + " " + path + ": holds no PEM " + (kind.empty() ? "block" : kind));
  }
  return text;
}

// Whether `key_pem` is the private key of the first certificate in
// `cert_pem` (gRPC finds out only when it starts listening, and then says
// only that it cannot).
bool key_matches_certificate(const std::string& cert_pem, const std::string& key_pem) {
  BIO* cert_bio = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  BIO* key_bio = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  X509* cert = cert_bio ? PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr) : nullptr;
  EVP_PKEY* key = key_bio ? PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr) : nullptr;
  const bool matches = cert != nullptr && key != nullptr && X509_check_private_key(cert, key) == 1;
  EVP_PKEY_free(key);
  X509_free(cert);
  BIO_free(key_bio);
  BIO_free(cert_bio);
  return matches;
}

}  // namespace

std::string listen_host(const std::string& listen) {
  std::string host = listen.substr(0, listen.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host;
}

bool is_loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

Result<std::shared_ptr<grpc::ServerCredentials>> server_credentials(const TlsFlags& tls, const std::string& listen) {
  if (tls.cert_file.empty()) {
    if (!tls.client_ca_file.empty()) {
      return Status::invalid_argument(
          "--tls-client-ca needs --tls-cert and --tls-key: client certificates are "
          "checked only over TLS");
    }
    if (!tls.insecure && !is_loopback_host(listen_host(listen))) {
      return Status::failed_precondition(
          "refusing to serve plaintext on " + listen +
          ", which is not a loopback address: anyone who reaches it could run and read every workflow. Give "
          "--tls-cert and --tls-key (and --tls-client-ca to require client certificates), or --insecure to serve "
          "plaintext anyway (behind a proxy or a private network that does the securing)");
    }
    return grpc::InsecureServerCredentials();
  }
  Result<std::string> cert = read_pem("--tls-cert", tls.cert_file, "CERTIFICATE");
  if (!cert) return cert.status();
  Result<std::string> key = read_pem("--tls-key", tls.key_file, "");
  if (!key) return key.status();
  if (key->find("PRIVATE KEY-----") == std::string::npos) {
    return Status::invalid_argument("--tls-key " + tls.key_file + ": holds no PEM private key");
  }
  if (!key_matches_certificate(*cert, *key)) {
    return Status::invalid_argument("--tls-key " + tls.key_file + " is not the private key of --tls-cert " +
                                    tls.cert_file + " (or one of them does not parse)");
  }
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({*key, *cert});
  if (!tls.client_ca_file.empty()) {
    Result<std::string> ca = read_pem("--tls-client-ca", tls.client_ca_file, "CERTIFICATE");
    if (!ca) return ca.status();
    options.pem_root_certs = *ca;
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

Result<ClusterPeers::Transport> peer_transport(const TlsFlags& tls) {
  ClusterPeers::Transport transport;
  if (tls.cert_file.empty()) return transport;  // plaintext, as the node serves
  Result<std::string> cert = read_pem("--tls-cert", tls.cert_file, "CERTIFICATE");
  if (!cert) return cert.status();
  Result<std::string> key = read_pem("--tls-key", tls.key_file, "");
  if (!key) return key.status();
  grpc::SslCredentialsOptions options;
  options.pem_cert_chain = *cert;
  options.pem_private_key = *key;
  if (!tls.peer_ca_file.empty()) {
    Result<std::string> ca = read_pem("--tls-peer-ca", tls.peer_ca_file, "CERTIFICATE");
    if (!ca) return ca.status();
    options.pem_root_certs = *ca;
  }
  transport.credentials = grpc::SslCredentials(options);
  transport.server_name = tls.peer_server_name;
  return transport;
}

Status check_callers_known(const TlsFlags& tls, const std::string& listen, bool api_keys_defined) {
  if (api_keys_defined || !tls.client_ca_file.empty() || is_loopback_host(listen_host(listen))) return Status::ok();
  if (tls.insecure) return Status::ok();
  return Status::failed_precondition(
      "refusing to serve " + listen +
      ", which is not a loopback address, with no API keys: anyone who reaches it could run and read every "
      "workflow. Create a key first (reprise admin key create --db DB --name NAME --role admin --namespace '*'), "
      "or require client certificates (--tls-client-ca), or give --insecure to serve anyway");
}

}  // namespace reprise::engine
