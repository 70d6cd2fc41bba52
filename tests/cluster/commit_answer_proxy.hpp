// A loopback TCP relay in front of a PostgreSQL that can lose one COMMIT of a
// node's transition writer: the connection is cut either before the COMMIT
// reaches the database or after the database has answered it (committed,
// the answer never delivered). Both leave the writer in doubt about its
// batch (Status::in_doubt), which is what the tests use it for.
//
// It reads the frontend protocol only as far as it must: the untyped
// start-up messages (SSL/GSS requests, then the start-up packet), then typed
// messages (a type byte and a length). A connection is the writer's once it
// prepares the statement that inserts history; its COMMIT is a simple
// query, "COMMIT".
//
// Thread rule: the methods may be called from any thread. Each relayed
// connection has two threads of its own; the destructor cuts every
// connection and joins them.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace reprise::cluster_testing {

class CommitAnswerProxy {
 public:
  enum class Cut { kBeforeTheDatabaseHasIt, kAfterTheDatabaseAnswered };

  // Relays 127.0.0.1:port() to 127.0.0.1:upstream_port.
  explicit CommitAnswerProxy(int upstream_port) : upstream_port_(upstream_port) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = loopback(0);
    int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener_, 64) != 0) {
      ::close(listener_);
      listener_ = -1;
      return;
    }
    socklen_t len = sizeof addr;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }

  ~CommitAnswerProxy() {
    stopping_ = true;
    if (listener_ >= 0) ::shutdown(listener_, SHUT_RDWR);
    if (acceptor_.joinable()) acceptor_.join();
    if (listener_ >= 0) ::close(listener_);
    std::vector<std::shared_ptr<Relay>> relays;
    {
      std::lock_guard lock(mu_);
      relays.swap(relays_);
    }
    for (auto& r : relays) r->cut();
    for (auto& r : relays) r->join();
  }

  CommitAnswerProxy(const CommitAnswerProxy&) = delete;
  CommitAnswerProxy& operator=(const CommitAnswerProxy&) = delete;

  // 0 if the listener could not be set up.
  int port() const { return port_; }

  // The next COMMIT a transition writer sends is lost as `cut` says.
  void cut_next_writer_commit(Cut cut) {
    cut_ = cut;
    armed_ = true;
  }
  // How many COMMITs were cut, and of those how many the database answered
  // (committed) before the cut.
  int commits_cut() const { return commits_cut_; }
  int commits_answered_then_cut() const { return answered_then_cut_; }

 private:
  struct Relay {
    int client = -1, server = -1;
    std::thread up, down;
    std::atomic<bool> writer{false};
    // Set once the COMMIT to lose after its answer is on its way.
    std::atomic<bool> drop_answer{false};
    void cut() {
      ::shutdown(client, SHUT_RDWR);
      ::shutdown(server, SHUT_RDWR);
    }
    void join() {
      if (up.joinable()) up.join();
      if (down.joinable()) down.join();
      ::close(client);
      ::close(server);
    }
  };

  static sockaddr_in loopback(int port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    return addr;
  }

  static bool read_exactly(int fd, char* out, size_t n) {
    while (n > 0) {
      ssize_t got = ::recv(fd, out, n, 0);
      if (got <= 0) return false;
      out += got;
      n -= static_cast<size_t>(got);
    }
    return true;
  }
  static bool write_all(int fd, const char* data, size_t n) {
    while (n > 0) {
      ssize_t sent = ::send(fd, data, n, MSG_NOSIGNAL);
      if (sent <= 0) return false;
      data += sent;
      n -= static_cast<size_t>(sent);
    }
    return true;
  }
  static uint32_t big_endian_32(const char* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return ntohl(v);
  }

  void accept_loop() {
    while (!stopping_) {
      int client = ::accept(listener_, nullptr, nullptr);
      if (client < 0) return;
      int server = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr = loopback(upstream_port_);
      if (::connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(server);
        ::close(client);
        continue;
      }
      auto relay = std::make_shared<Relay>();
      relay->client = client;
      relay->server = server;
      relay->up = std::thread([this, relay] { client_to_server(*relay); });
      relay->down = std::thread([this, relay] { server_to_client(*relay); });
      std::lock_guard lock(mu_);
      relays_.push_back(std::move(relay));
    }
  }

  // Message by message, so a COMMIT can be recognised and cut.
  void client_to_server(Relay& r) {
    bool starting_up = true;
    std::string message;
    while (true) {
      if (starting_up) {
        message.resize(4);
        if (!read_exactly(r.client, message.data(), 4)) break;
        const uint32_t length = big_endian_32(message.data());
        if (length < 8 || length > (1u << 20)) break;
        message.resize(length);
        if (!read_exactly(r.client, message.data() + 4, length - 4)) break;
        const uint32_t code = big_endian_32(message.data() + 4);
        // 80877103 SSLRequest and 80877104 GSSENCRequest come before the
        // start-up packet, answered with one byte.
        starting_up = code == 80877103 || code == 80877104;
        if (!write_all(r.server, message.data(), message.size())) break;
        continue;
      }
      message.resize(5);
      if (!read_exactly(r.client, message.data(), 5)) break;
      const uint32_t length = big_endian_32(message.data() + 1);
      if (length < 4) break;
      message.resize(1 + length);
      if (!read_exactly(r.client, message.data() + 5, length - 4)) break;
      const std::string_view body(message.data() + 5, message.size() - 5);
      if (message[0] == 'P' && body.find("INSERT INTO history (") != std::string_view::npos) r.writer = true;
      const bool commit = message[0] == 'Q' && body == std::string_view("COMMIT\0", 7);
      if (commit && r.writer && armed_.exchange(false)) {
        ++commits_cut_;
        if (cut_ == Cut::kBeforeTheDatabaseHasIt) {
          r.cut();
          break;
        }
        r.drop_answer = true;
      }
      if (!write_all(r.server, message.data(), message.size())) break;
    }
    ::shutdown(r.server, SHUT_WR);
  }

  void server_to_client(Relay& r) {
    char buffer[16384];
    while (true) {
      ssize_t got = ::recv(r.server, buffer, sizeof buffer, 0);
      if (got <= 0) break;
      // The database answers COMMIT once it has committed; that answer is
      // the one the writer never gets.
      if (r.drop_answer) {
        ++answered_then_cut_;
        r.cut();
        break;
      }
      if (!write_all(r.client, buffer, static_cast<size_t>(got))) break;
    }
    ::shutdown(r.client, SHUT_WR);
  }

  const int upstream_port_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> armed_{false};
  std::atomic<Cut> cut_{Cut::kAfterTheDatabaseAnswered};
  std::atomic<int> commits_cut_{0}, answered_then_cut_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::shared_ptr<Relay>> relays_;
};

}  // namespace reprise::cluster_testing
