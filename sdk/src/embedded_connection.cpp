// Connection::embedded: see embedded_connection.hpp.
#include "sdk/src/embedded_connection.hpp"

namespace reprise {

std::shared_ptr<EmbeddedConnection> open_embedded(const std::string& database_path, const Clock* clock) {
  auto store = engine::SqliteStore::open(database_path);
  if (!store) throw Error("cannot open the embedded engine: " + store.status().to_string());
  engine::EngineOptions options;
  options.poll_timeout = std::chrono::seconds(2);  // in process, an empty poll is cheap; stop() waits less
  options.clock = clock;
  // A manual clock (TestEnvironment) skips days at a time while a test still
  // reads the runs it started: nothing is deleted by retention there.
  if (clock != nullptr) options.retention = std::chrono::seconds(0);
  auto engine = engine::Engine::start(**store, options);
  if (!engine) throw Error("cannot start the embedded engine: " + engine.status().to_string());
  return std::make_shared<EmbeddedConnection>(std::move(store).value(), std::move(engine).value());
}

void EmbeddedConnection::fire_due_timers() { engine_->check_timers(); }

bool EmbeddedConnection::has_pending_tasks() {
  if (engine_->queued_tasks() > 0) return true;
  Result<std::vector<engine::TaskRecord>> stored = store_->load_tasks(0, 1);
  return !stored || !stored->empty();
}

std::optional<TimePoint> EmbeddedConnection::next_timer_time() {
  Result<std::optional<TimePoint>> next = store_->next_timer_time();
  return next ? *next : std::nullopt;
}

std::shared_ptr<Connection> Connection::embedded(const std::string& database_path) {
  return open_embedded(database_path, nullptr);
}

}  // namespace reprise
