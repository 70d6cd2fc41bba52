#include "engine/server/metrics_endpoint.hpp"

#include <httplib.h>

namespace reprise::engine {

HttpRoutes metrics_routes(const metrics::Registry& registry) {
  HttpRoutes routes;
  routes.install = [&registry](httplib::Server& server) {
    server.Get("/metrics", [&registry](const httplib::Request&, httplib::Response& response) {
      response.set_content(registry.scrape(), "text/plain; version=0.0.4; charset=utf-8");
    });
  };
  return routes;
}

}  // namespace reprise::engine
