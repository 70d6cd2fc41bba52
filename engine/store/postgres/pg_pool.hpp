// PgPool: the PostgreSQL store's shared connections (reads, the blob store's
// short transactions), borrowed one caller at a time.
//
// The database may drop a connection at any moment: it restarted, its
// primary failed over to a standby (a multi-host URL with
// target_session_attrs=read-write then finds the new primary), or the
// network broke. A borrowed connection found broken is connected again before
// it is used, and a read that fails because its connection broke under it
// runs once more on a new connection: a read changes nothing, so running it
// twice is safe. A transaction is never run twice (its COMMIT may have
// happened even though its answer was lost); it fails UNAVAILABLE and the
// next borrower connects again.
//
// Thread rule: any thread; each call borrows a connection for its duration
// and waits while all are borrowed.
#pragma once

#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#include "engine/store/postgres/pg_connection.hpp"
#include "engine/store/read_pool.hpp"

namespace reprise::engine {

class PgPool {
 public:
  explicit PgPool(std::vector<std::unique_ptr<PgConnection>> connections) : connections_(std::move(connections)) {}

  // Runs `read` (statements outside a transaction that change nothing) and
  // returns what it returns: a Status or a Result.
  template <typename Read>
  std::invoke_result_t<Read&, PgConnection&> read(Read&& read) {
    ConnectionPool<PgConnection>::Lease db = connections_.acquire();
    if (db->broken()) REPRISE_RETURN_IF_ERROR(db->reconnect());
    auto first = read(*db);
    if (first.is_ok() || !db->broken()) return first;
    REPRISE_RETURN_IF_ERROR(db->reconnect());
    return read(*db);
  }

  // Runs `work` in a transaction: committed if it returns OK, rolled back
  // otherwise.
  Status transaction(const std::function<Status(PgConnection&)>& work) {
    ConnectionPool<PgConnection>::Lease db = connections_.acquire();
    if (db->broken()) REPRISE_RETURN_IF_ERROR(db->reconnect());
    Status began = db->exec("BEGIN");
    // A connection dropped while it sat in the pool shows only now; nothing
    // has been sent that could have happened, so connect again and begin.
    if (!began.is_ok() && db->broken()) {
      REPRISE_RETURN_IF_ERROR(db->reconnect());
      began = db->exec("BEGIN");
    }
    REPRISE_RETURN_IF_ERROR(began);
    Status s = work(*db);
    if (s.is_ok()) return db->exec("COMMIT");
    if (!db->broken()) (void)db->exec("ROLLBACK");
    return s;
  }

 private:
  ConnectionPool<PgConnection> connections_;
};

}  // namespace reprise::engine
