// --ui-listen: the web UI, pages and the JSON API under /api/ they call,
// served by an HttpListener (http_listener.hpp), alone or beside /metrics.
//
//   GET  /                      the page (index.html; app.js and style.css beside
//                               it): compiled into the binary (engine/server/ui/)
//   GET  /api/workflows         list: type, status, queue, started_after,
//                               started_before (RFC 3339), id_prefix, page_size,
//                               next_page_token
//   GET  /api/workflow?id=&run= describe: status, pending activities, timers,
//                               children, the blocked workflow task's failure
//   GET  /api/history?id=&run=&next_page_token=   a page of events (1000)
//   GET  /api/blob?sha256=HEX   a claim-check blob, as a download
//   GET  /api/server            queues and backlog, requests in flight, the
//                               store's problem, a summary of the metrics
//   POST /api/signal            {"id", "run", "name", "args": [JSON values]}
//   POST /api/query             {"id", "run", "name", "args": [JSON values]}
//   POST /api/cancel            {"id", "run", "reason"}
//   POST /api/terminate         {"id", "run", "reason"}
//
// Answers are JSON ({"error": …, "code": …} with a 4xx/5xx status on
// failure). A POST is refused (403) unless it is application/json with the
// header X-Reprise-UI: 1 and, when it has an Origin, that origin is this
// host: a form or script on a foreign page cannot send that without a CORS
// preflight, which this listener never grants. On a loopback address every
// request must name a loopback Host (localhost, 127.x, [::1]), so a foreign
// page cannot reach it through DNS rebinding. Pages get a Content-Security-
// Policy that allows only this origin's scripts and styles, and the page
// script builds the DOM with textContent, never HTML from data.
//
// Thread safety: handlers run on the listener's threads and wait for the
// engine's answer (bounded). Lifetime: the engine, the blob store and the
// registry outlive the listener.
#pragma once

#include <string>

#include "engine/engine.hpp"
#include "engine/server/http_listener.hpp"
#include "engine/store/blob_store.hpp"
#include "reprise/metrics.hpp"

namespace reprise::engine {

struct WebUiOptions {
  // Requests must name a loopback Host (the UI listens on loopback).
  bool loopback_hosts_only = true;
  // The /api/server page's metrics summary; nullptr: none.
  const metrics::Registry* registry = nullptr;
};

// Four threads: a query holds one while a worker answers (at most 10 s).
// Bodies up to 1 MiB (a signal's arguments).
HttpRoutes web_ui_routes(Engine& engine, BlobStore& blobs, WebUiOptions options);

}  // namespace reprise::engine
