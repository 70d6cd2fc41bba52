#include "reprise/tls.hpp"

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "reprise/errors.hpp"

namespace reprise {

namespace {

std::string read_file(const std::string& what, const std::string& path) {
  if (path.empty()) return "";
  std::ifstream in(path);
  if (!in) throw Error("cannot read the " + what + " file '" + path + "'");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

}  // namespace

TlsOptions TlsOptions::from_files(const std::string& server_ca_file, const std::string& client_cert_file,
                                  const std::string& client_key_file, const std::string& server_name) {
  if (client_cert_file.empty() != client_key_file.empty()) {
    throw Error("a TLS client certificate needs its key, and a key its certificate");
  }
  TlsOptions tls;
  tls.server_ca_pem = read_file("TLS CA", server_ca_file);
  tls.client_cert_pem = read_file("TLS client certificate", client_cert_file);
  tls.client_key_pem = read_file("TLS client key", client_key_file);
  tls.server_name = server_name;
  return tls;
}

std::optional<TlsOptions> TlsOptions::from_environment() {
  const std::string ca = environment("REPRISE_TLS_CA"), cert = environment("REPRISE_TLS_CERT"),
                    key = environment("REPRISE_TLS_KEY"), name = environment("REPRISE_TLS_SERVER_NAME");
  if (ca.empty() && cert.empty() && key.empty() && name.empty()) return std::nullopt;
  return from_files(ca, cert, key, name);
}

}  // namespace reprise
