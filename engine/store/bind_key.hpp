// Binds an ExecutionKey to parameters ?1, ?2, ?3 (namespace, workflow id,
// run id), the order every store query uses.
#pragma once

#include "engine/store/records.hpp"
#include "engine/store/sqlite_db.hpp"

namespace reprise::engine {

inline Statement& bind_key(Statement& s, const ExecutionKey& k) {
  return s.bind(1, k.namespace_id).bind(2, k.workflow_id).bind(3, k.run_id);
}

}  // namespace reprise::engine
