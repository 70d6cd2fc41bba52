// The shapes docs/sdk.md recommends around g++ 12's miscompilation of
// braced temporaries inside a co_await expression (an aggregate built with
// braces is destroyed wrongly; a braced list does not compile): the value
// built in a statement of its own and awaited by name, options built by
// their setters inline, any()/all() over futures. Run under ASan
// (./run test-asan), a bad free here fails the suite.
#include <gtest/gtest.h>

#include <string>

#include "tests/worker/history_recorder.hpp"
#include "worker/workflow_instance.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

// An aggregate whose members free memory: the shape g++ 12 gets wrong as a
// braced temporary inside co_await. Strings past the small-string buffer.
struct Order {
  std::string id;
  std::string note;
  MSGPACK_DEFINE_MAP(id, note);
};

std::string ship(ActivityContext&, Order order) { return order.id; }
inline constexpr Activity<&ship> ship_order{"ship"};

Workflow<std::string> named_then_awaited(WorkflowContext& ctx) {
  Order first{"order-with-a-long-identifier-0001", "a note long enough to live on the heap"};
  Order second{"order-with-a-long-identifier-0002", "another note long enough for the heap"};
  auto a =
      ctx.execute(ship_order, ActivityOptions::start_to_close(1min).maximum_attempts(3).non_retryable("Lost"), first);
  auto b = ctx.execute(ship_order, ActivityOptions::start_to_close(1min).retry_initial_interval(2s), second);
  auto [x, y] = co_await all(a, b);
  co_return x + "+" + y;
}

TEST(BracedTemporaries, ANamedAggregateAndInlineOptionsAwaitCleanly) {
  Recorder rec(to_payloads());
  auto live = std::make_unique<worker::WorkflowInstance>("named", worker::make_starter<&named_then_awaited>("named"));
  live->set_execution("wf-1", "run-1");
  auto first = live->apply(rec.history());
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_EQ(first->commands.size(), 2u);
  const Order sent = from_payload<Order>(first->commands[0].schedule_activity_task().input().payloads(0), "input");
  EXPECT_EQ(sent.note, "a note long enough to live on the heap");
  EXPECT_EQ(first->commands[0].schedule_activity_task().retry_policy().maximum_attempts(), 3);
  rec.completed(first->commands);
  rec.activity_completed_at(5, to_payload(std::string("one")));
  rec.activity_completed_at(6, to_payload(std::string("two")));
  rec.task();
  auto second = live->apply(rec.history_from(live->last_event_id() + 1));
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  ASSERT_FALSE(second->commands.empty());
  ASSERT_TRUE(second->commands.back().has_complete_workflow_execution());
  EXPECT_EQ(from_payload<std::string>(second->commands.back().complete_workflow_execution().result().payloads(0), "r"),
            "one+two");
}

}  // namespace
}  // namespace reprise
