// reprise-server's flags: each declared once, with its help, on a CLI11 app.
// main.cpp parses them; tests build the same app to list every flag the
// server accepts. Thread rule: main thread, before the server starts.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "engine/engine.hpp"
#include "engine/server/keepalive.hpp"
#include "engine/server/server_tls.hpp"
#include "engine/store/postgres/postgres_store.hpp"
#include "engine/store/sqlite_store.hpp"

namespace reprise::engine {

struct ServerFlags {
  std::string db = "./reprise.db";
  std::string listen = "127.0.0.1:7233";
  TlsFlags tls;
  PeerKeepalive peer_keepalive;  // a cluster node's pings to the others
  std::string metrics_listen;    // "": no metrics listener
  std::string ui_listen;         // "": no web UI
  EngineOptions engine;
  StoreOptions store;             // a SQLite --db
  PostgresStoreOptions postgres;  // a postgresql:// --db
};

// Declares every flag on `app`, writing into `flags` (which must outlive the
// parse). --log-level and --log-format set the process's log settings
// (engine/log.hpp) as they are parsed.
void add_server_flags(CLI::App& app, ServerFlags& flags);

}  // namespace reprise::engine
