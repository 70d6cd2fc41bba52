// What the command-machine tests share: a resolver that records what it
// resolved, futures, events taken from histories the real engine wrote
// (tests/worker/histories/), and events built field by field for the
// shapes the engine never writes.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "history/event_builder.hpp"
#include "tests/worker/recorded_history.hpp"
#include "worker/machines/command_machine.hpp"

namespace reprise::worker {

// Resolves as the instance does (ready), and remembers the order.
struct RecordingResolver final : FutureResolver {
  std::vector<std::shared_ptr<detail::Pending>> resolved;
  void resolve(const std::shared_ptr<detail::Pending>& pending) override {
    pending->ready = true;
    resolved.push_back(pending);
  }
};

inline std::shared_ptr<detail::Pending> future(detail::Pending::Kind kind, std::string name) {
  auto pending = std::make_shared<detail::Pending>();
  pending->kind = kind;
  pending->name = std::move(name);
  return pending;
}

// Event `id`, its attributes set by `fill`.
template <typename Fill>
v1::HistoryEvent event(int64_t id, Fill fill) {
  v1::HistoryEvent e;
  e.set_event_id(id);
  fill(e);
  e.set_event_type(history::event_type_for(e.attributes_case()));
  return e;
}

// The `nth` event (from 1) of the recorded history `name` whose attributes
// are `which`: what the engine wrote, ids and fields as it filled them in.
inline v1::HistoryEvent recorded_event(const std::string& name, v1::HistoryEvent::AttributesCase which, int nth = 1) {
  const v1::History h = recorded::history(name);
  for (const v1::HistoryEvent& e : h.events()) {
    if (e.attributes_case() == which && --nth == 0) return e;
  }
  ADD_FAILURE() << name << " has no such event";
  return {};
}

// A table names each {state, input} at most once: the machine is a function.
template <typename Table>
void expect_one_row_per_state_and_input(const Table& table) {
  std::set<std::pair<int, int>> seen;
  for (const auto& row : table) {
    EXPECT_TRUE(seen.emplace(static_cast<int>(row.from), static_cast<int>(row.on)).second)
        << "state " << static_cast<int>(row.from) << " has two rows for input " << static_cast<int>(row.on);
  }
}

}  // namespace reprise::worker
