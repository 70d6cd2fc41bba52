// One HTTP/1.1 exchange over a raw loopback TCP connection, for the tests
// and benchmarks that read a server's /metrics page or send it bytes no HTTP
// client would. Header-only; no test framework.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>

namespace reprise::testing_http {

// A TCP connection to 127.0.0.1 at the port of `address` (HOST:PORT), or -1.
inline int connect_to_loopback(const std::string& address) {
  const int port = std::atoi(address.substr(address.rfind(':') + 1).c_str());
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` and reads the answer until the server closes, for at most
// `limit`: the whole answer (status line, headers, body), or "" when nothing
// listens there.
inline std::string http_exchange(const std::string& address, const std::string& request,
                                 std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const int fd = connect_to_loopback(address);
  if (fd < 0) return "";
  (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string answer;
  const auto until = std::chrono::steady_clock::now() + limit;
  char buffer[65536];
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    answer.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return answer;
}

// GET /metrics of the server whose metrics listen at `address`.
inline std::string scrape_metrics(const std::string& address) {
  return http_exchange(address, "GET /metrics HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
}

}  // namespace reprise::testing_http
