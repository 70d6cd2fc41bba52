// --metrics-listen's route: GET /metrics answers the registry's scrape in
// the Prometheus text format. Served by an HttpListener (http_listener.hpp),
// alone or beside the web UI.
//
// Thread safety: scrapes run on the listener's threads. Lifetime: the
// registry outlives the listener.
#pragma once

#include "engine/server/http_listener.hpp"
#include "reprise/metrics.hpp"

namespace reprise::engine {

// Two threads: scrapes are rare, and a client holding one (a slow read) is
// cut off by the listener's timeouts. Requests carry no body.
HttpRoutes metrics_routes(const metrics::Registry& registry);

}  // namespace reprise::engine
