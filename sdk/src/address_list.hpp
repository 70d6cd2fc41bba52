// The server addresses Connection::remote takes: one gRPC target, or a
// comma-separated list of HOST:PORT entries (several nodes of a cluster,
// docs/cluster.md "Clients with several addresses").
//
// Thread safety: a pure function.
#pragma once

#include <string>
#include <vector>

namespace reprise::detail {

// "a:7233,b:7233" gives {"a:7233", "b:7233"} (spaces around an entry are
// dropped; an IPv6 host is bracketed, "[::1]:7233"). A text without a comma
// is one gRPC target, passed on as it is (a name, an address, a
// "unix:/path"). Throws reprise::Error naming the list and the entry that is
// not HOST:PORT (empty, no port, a port that is not 1 to 65535, a host with
// a space or a '/').
std::vector<std::string> parse_address_list(const std::string& text);

}  // namespace reprise::detail
