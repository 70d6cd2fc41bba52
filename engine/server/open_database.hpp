// The server's database: a postgresql:// URL opens the PostgreSQL store, any
// other --db a SQLite file. Logs what opening found (a new database, the
// quick_check's time, PostgreSQL's durability settings). Thread rule: main
// thread, before the server starts.
#pragma once

#include <memory>

#include "engine/server/server_flags.hpp"
#include "engine/store/store.hpp"

namespace reprise::engine {

Result<std::unique_ptr<Store>> open_database(ServerFlags& flags);

// A store shared by a cluster: the address this node announces to the
// others (--cluster-address, else the host name and `port`, the one it
// listens on), which it returns. Nothing ("") for a SQLite store.
std::string announce_address(Store& store, const ServerFlags& flags, int port);

}  // namespace reprise::engine
