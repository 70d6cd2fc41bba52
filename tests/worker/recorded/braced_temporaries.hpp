// The workflow of braced_temporaries_test.cpp, whose history
// recorded/braced_temporaries.cpp records from the real engine.
#pragma once

#include <string>

#include "reprise/activity.hpp"
#include "reprise/workflow.hpp"

namespace reprise::recorded::braced {

using namespace std::chrono_literals;

// An aggregate whose members free memory: the shape g++ 12 gets wrong as a
// braced temporary inside co_await. Strings past the small-string buffer.
struct Order {
  std::string id;
  std::string note;
  MSGPACK_DEFINE_MAP(id, note);
};

inline std::string ship(ActivityContext&, Order order) { return order.id; }
inline constexpr Activity<&ship> ship_order{"ship"};

inline Workflow<std::string> named_then_awaited(WorkflowContext& ctx) {
  Order first{"order-with-a-long-identifier-0001", "a note long enough to live on the heap"};
  Order second{"order-with-a-long-identifier-0002", "another note long enough for the heap"};
  auto a =
      ctx.execute(ship_order, ActivityOptions::start_to_close(1min).maximum_attempts(3).non_retryable("Lost"), first);
  auto b = ctx.execute(ship_order, ActivityOptions::start_to_close(1min).retry_initial_interval(2s), second);
  auto [x, y] = co_await all(a, b);
  co_return x + "+" + y;
}
inline constexpr WorkflowDef<&named_then_awaited> named_then_awaited_wf{"named"};

}  // namespace reprise::recorded::braced
