#include "engine/server/http_listener.hpp"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "engine/thread_name.hpp"

namespace reprise::engine {

struct HttpListener::Impl {
  std::vector<HttpRoutes> parts;  // what the handlers use lives as long as they do
  httplib::Server server;
  std::thread thread;
};

HttpListener::HttpListener(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpListener::~HttpListener() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

Result<std::unique_ptr<HttpListener>> HttpListener::start(const std::string& flag, const std::string& address,
                                                          const std::vector<HttpRoutes>& parts) {
  const Status malformed = Status::invalid_argument(flag + " wants HOST:PORT, got '" + address + "'");
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) return malformed;
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  char* end = nullptr;
  const long port = std::strtol(address.c_str() + colon + 1, &end, 10);
  if (end == address.c_str() + colon + 1 || *end != '\0' || port < 0 || port > 65535) return malformed;

  auto impl = std::make_unique<Impl>();
  impl->parts = parts;
  httplib::Server& server = impl->server;
  int threads = 0;
  size_t max_request_bytes = 0;
  for (const HttpRoutes& part : parts) {
    threads += part.threads;
    max_request_bytes = std::max(max_request_bytes, part.max_request_bytes);
    part.install(server);
  }
  server.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  server.set_read_timeout(std::chrono::seconds(1));
  server.set_write_timeout(std::chrono::seconds(5));
  server.set_keep_alive_timeout(2);
  server.set_keep_alive_max_count(100);
  server.set_payload_max_length(max_request_bytes);

  int bound = static_cast<int>(port);
  if (port == 0) {
    bound = server.bind_to_any_port(host);
  } else if (!server.bind_to_port(host, bound)) {
    bound = -1;
  }
  if (bound <= 0) return Status::unavailable("cannot listen on " + address + " (" + flag + ")");
  // Named by itself before it starts the pool, whose threads take its name:
  // named from here, the pool could start first and show the program's name.
  impl->thread = std::thread([&server] {
    name_this_thread("http");
    server.listen_after_bind();
  });
  // stop() does nothing to a server not yet running, and the destructor's
  // join would then wait forever: return once it runs.
  for (int i = 0; i < 2000 && !server.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  std::unique_ptr<HttpListener> listener(new HttpListener(std::move(impl)));
  listener->address_ = address.substr(0, colon) + ":" + std::to_string(bound);
  return listener;
}

}  // namespace reprise::engine
