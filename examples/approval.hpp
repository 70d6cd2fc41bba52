// human approval: an expense waits for a decision by signal, answers a
// query about where it stands, and is rejected when nobody decides in time.
#pragma once

#include <string>

#include "reprise/workflow.hpp"

namespace examples {

using namespace std::chrono_literals;

struct Decision {
  std::string by;
  bool approved = false;
  MSGPACK_DEFINE_MAP(by, approved);
};
inline constexpr reprise::Signal<Decision> decide{"decide"};
inline constexpr reprise::Query<std::string> expense_status{"status"};

inline reprise::Workflow<std::string> expense(reprise::WorkflowContext& ctx, std::string item, int64_t timeout_ms) {
  std::string status = "waiting for a decision on " + item;
  ctx.on_query(expense_status, [&status] { return status; });
  std::optional<Decision> d = co_await ctx.wait(decide, std::chrono::milliseconds(timeout_ms));
  status = !d ? "expired" : (d->approved ? "approved by " : "rejected by ") + d->by;
  co_return item + ": " + status;
}
inline constexpr reprise::WorkflowDef<&expense> expense_wf{"expense"};

}  // namespace examples
