#include "engine/server/metrics_endpoint.hpp"

#include <httplib.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace reprise::engine {

struct MetricsEndpoint::Impl {
  httplib::Server server;
  std::thread thread;
};

MetricsEndpoint::MetricsEndpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsEndpoint::~MetricsEndpoint() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::start(const std::string& address,
                                                                const metrics::Registry& registry) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::invalid_argument("--metrics-listen wants HOST:PORT, got '" + address + "'");
  }
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  char* end = nullptr;
  const long port = std::strtol(address.c_str() + colon + 1, &end, 10);
  if (end == address.c_str() + colon + 1 || *end != '\0' || port < 0 || port > 65535) {
    return Status::invalid_argument("--metrics-listen wants HOST:PORT, got '" + address + "'");
  }

  auto impl = std::make_unique<Impl>();
  httplib::Server& server = impl->server;
  // Two threads: scrapes are rare, and a client holding one (a slow read)
  // is cut off by the timeouts below.
  server.new_task_queue = [] { return new httplib::ThreadPool(2); };
  server.set_read_timeout(std::chrono::seconds(1));
  server.set_write_timeout(std::chrono::seconds(2));
  server.set_keep_alive_timeout(2);
  server.set_keep_alive_max_count(10);
  server.set_payload_max_length(4096);
  server.Get("/metrics", [&registry](const httplib::Request&, httplib::Response& response) {
    response.set_content(registry.scrape(), "text/plain; version=0.0.4; charset=utf-8");
  });

  int bound = static_cast<int>(port);
  if (port == 0) {
    bound = server.bind_to_any_port(host);
  } else if (!server.bind_to_port(host, bound)) {
    bound = -1;
  }
  if (bound <= 0) return Status::unavailable("cannot listen for metrics on " + address);
  impl->thread = std::thread([&server] { server.listen_after_bind(); });
  // stop() does nothing to a server not yet running, and the destructor's
  // join would then wait forever: return once it runs.
  for (int i = 0; i < 2000 && !server.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  std::unique_ptr<MetricsEndpoint> endpoint(new MetricsEndpoint(std::move(impl)));
  endpoint->address_ = address.substr(0, colon) + ":" + std::to_string(bound);
  return endpoint;
}

}  // namespace reprise::engine
