#include "engine/store/postgres/pg_pool.hpp"

namespace reprise::engine {

Status PgPool::transaction(const std::function<Status(PgConnection&)>& work) {
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

}  // namespace reprise::engine
