// What the engine does after a commit in doubt (Status::in_doubt(): the
// store sent the batch to be committed and lost the answer, as when
// PostgreSQL's connection drops at COMMIT). The transition may have been
// committed: its tasks would then sit in the store, never dispatched until
// the node restarted or gained their shards again, and its watchers would
// not look again. Its tasks have ids above every id an earlier commit got
// (the store hands ids out in commit order), so those rows are loaded and
// dispatched: matching drops a task it holds already, and a task whose
// start is recorded already is found stale when it is started again. A
// batch in doubt fails every transition in it, so the reloads are merged
// into one, run again while commits in doubt keep coming, and tried again
// every second while the store does not answer. docs/engine.md, "Commits
// in doubt".
#include "engine/engine.hpp"
#include "engine/log.hpp"

namespace reprise::engine {

void Engine::after_commit_in_doubt(int64_t committed_before, bool added_tasks,
                                   const std::vector<ExecutionKey>& changed) {
  for (const auto& key : changed) wake_watchers(key);
  if (!added_tasks) return;
  {
    std::lock_guard lock(in_doubt_reload_.mu);
    if (in_doubt_reload_.running) {
      in_doubt_reload_.after = std::min(in_doubt_reload_.after, committed_before);
      in_doubt_reload_.again = true;
      return;
    }
    in_doubt_reload_.running = true;
    in_doubt_reload_.after = committed_before;
  }
  reload_tasks_in_doubt();
}

void Engine::reload_tasks_in_doubt() {
  while (true) {
    int64_t after = 0;
    {
      std::lock_guard lock(in_doubt_reload_.mu);
      after = in_doubt_reload_.after;
      in_doubt_reload_.again = false;
    }
    OperationRef in_flight = begin_op();
    if (!in_flight) return;  // closing: the next start loads every task
    // A shard not served now is loaded again when it is gained: its lease
    // ran out, and that is announced as a loss (pg_shard_leases.cpp).
    int64_t not_served = 0;
    Result<int64_t> loaded = reload_tasks(after, [this, &not_served](const TaskRecord& task) {
      if (serves(task.execution)) return true;
      ++not_served;
      return false;
    });
    if (!loaded) {
      log::warn("tasks of a commit in doubt not loaded; trying again in 1 s", {{"error", loaded.status().to_string()}});
      deadlines_.schedule(deadlines_.now() + std::chrono::seconds(1),
                          [this] { executor_.post([this] { reload_tasks_in_doubt(); }); });
      return;
    }
    log::info("tasks of a commit in doubt loaded",
              {{"tasks", std::to_string(*loaded)}, {"not_served_now", std::to_string(not_served)}});
    std::lock_guard lock(in_doubt_reload_.mu);
    if (!in_doubt_reload_.again) {
      in_doubt_reload_.running = false;
      return;
    }
  }
}

}  // namespace reprise::engine
