// Certificates for the TLS tests, made by the openssl command (in ./run's
// packages) in a temporary directory that lives as long as the object.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "../store/store_test_util.hpp"

namespace reprise {

// A CA, a server certificate for localhost and 127.0.0.1, a client
// certificate, a cluster node's certificate (server and client use, for
// localhost and 127.0.0.1), and another CA with a client certificate of its
// own.
struct Certificates {
  engine::testing::TempDir dir;
  std::string path(const std::string& name) const { return dir.file(name); }
  std::string read(const std::string& name) const {
    std::ifstream in(path(name));
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  Certificates() {
    const std::string d = dir.file("");
    const std::string script =
        "set -e; cd '" + d +
        "'; exec >openssl.log 2>&1\n"
        "key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out $1; }\n"
        "ca() { key $1.key; openssl req -x509 -new -key $1.key -subj /CN=$1 -days 2 -out $1.pem; }\n"
        "signed() { key $2.key; openssl req -new -key $2.key -subj /CN=$2 -out $2.csr;\n"
        "  printf \"$3\" > $2.ext;\n"
        "  openssl x509 -req -in $2.csr -CA $1.pem -CAkey $1.key -CAcreateserial -days 2 -extfile $2.ext "
        "-out $2.pem; }\n"
        "ca ca; ca other-ca\n"
        "signed ca server 'subjectAltName=DNS:localhost,IP:127.0.0.1\\nextendedKeyUsage=serverAuth\\n'\n"
        "signed ca worker 'extendedKeyUsage=clientAuth\\n'\n"
        "signed ca node 'subjectAltName=DNS:localhost,IP:127.0.0.1\\nextendedKeyUsage=serverAuth,clientAuth\\n'\n"
        "signed other-ca stranger 'extendedKeyUsage=clientAuth\\n'\n";
    std::ofstream(dir.file("make-certificates.sh")) << script;
    const int status = std::system(("sh '" + dir.file("make-certificates.sh") + "'").c_str());
    EXPECT_EQ(status, 0) << "openssl failed; see " << d << "openssl.log";
  }
};

}  // namespace reprise
