// One HTTP listener (cpp-httplib) serving the routes of one or more parts:
// --metrics-listen's /metrics, --ui-listen's web UI, or both on one address.
//
// A client cannot wedge it or the server: a fixed pool of threads serves the
// connections, a read gives up after 1 s and a write after 5 s, a kept-alive
// connection closes after 2 s idle or 100 requests, and a request body
// larger than the parts allow is refused (413). It binds only the address
// given.
//
// Thread safety: start() and the destructor on one thread; handlers run on
// the listener's threads. Lifetime: what the routes use outlives the
// listener; the destructor stops listening and joins its threads.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "history/status.hpp"

namespace httplib {
class Server;
}

namespace reprise::engine {

// One part's routes and what it needs of the listener.
struct HttpRoutes {
  std::function<void(httplib::Server&)> install;
  int threads = 2;
  size_t max_request_bytes = 4096;
};

class HttpListener {
 public:
  // `address`: HOST:PORT ([::1]:PORT for IPv6); port 0 picks a free one.
  // `flag` names the address in errors ("--metrics-listen"). The pool has
  // the parts' threads together; a body may be as large as the largest part
  // allows.
  static Result<std::unique_ptr<HttpListener>> start(const std::string& flag, const std::string& address,
                                                     const std::vector<HttpRoutes>& parts);
  ~HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // HOST:PORT with the port bound.
  const std::string& address() const { return address_; }

 private:
  struct Impl;
  explicit HttpListener(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::string address_;
};

}  // namespace reprise::engine
