// The HTTP listener of --metrics-listen: GET /metrics answers the
// registry's scrape in the Prometheus text format; anything else is 404.
//
// A client cannot wedge it or the server: a fixed pool of two threads
// serves the connections, a read gives up after 1 s and a write after 2 s,
// a kept-alive connection closes after 2 s idle or 10 requests, and a request
// larger than a few KiB is refused. It binds only the address given.
//
// Thread safety: start() and the destructor on one thread; scrapes run on
// the listener's threads. Lifetime: the registry outlives the endpoint; the
// destructor stops listening and joins its threads.
#pragma once

#include <memory>
#include <string>

#include "history/status.hpp"
#include "reprise/metrics.hpp"

namespace reprise::engine {

class MetricsEndpoint {
 public:
  // `address`: HOST:PORT ([::1]:PORT for IPv6); port 0 picks a free one.
  static Result<std::unique_ptr<MetricsEndpoint>> start(const std::string& address, const metrics::Registry& registry);
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // HOST:PORT with the port bound.
  const std::string& address() const { return address_; }

 private:
  struct Impl;
  explicit MetricsEndpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::string address_;
};

}  // namespace reprise::engine
