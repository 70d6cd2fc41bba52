// The server's gauges and the store's counts, read at each scrape: task
// queue backlogs and parked polls, requests in flight, the store's commits,
// syncs and checkpoints (StorageStats), the blobs stored, and the database's file sizes
// (docs/operations.md, "Metrics").
//
// Thread safety: the hooks run on the scraping thread, one scrape at a
// time; they read the engine and store through their thread-safe calls.
// Lifetime: `engine` and `blobs` outlive every scrape (the metrics listener stops
// before the engine does).
#pragma once

#include <string>

#include "engine/engine.hpp"
#include "reprise/metrics.hpp"

namespace reprise::engine {

void add_server_metrics(metrics::Registry& registry, Engine& engine, BlobStore& blobs, const std::string& db_path);

}  // namespace reprise::engine
