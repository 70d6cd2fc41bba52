// The shapes docs/sdk.md recommends around g++ 12's miscompilation of
// braced temporaries inside a co_await expression (an aggregate built with
// braces is destroyed wrongly; a braced list does not compile): the value
// built in a statement of its own and awaited by name, options built by
// their setters inline, any()/all() over futures. The workflow
// (recorded/braced_temporaries.hpp) replays the history the real engine
// wrote for it, afresh and task by task. Run under ASan (./run test-asan),
// a bad free here fails the suite.
#include "tests/worker/recorded/braced_temporaries.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tests/worker/recorded_history.hpp"

namespace reprise {
namespace {

TEST(BracedTemporaries, ANamedAggregateAndInlineOptionsAwaitCleanly) {
  const v1::History h = recorded::history("braced_named");
  const auto starter = worker::make_starter<&recorded::braced::named_then_awaited>("named");
  recorded::expect_replays_as_recorded(h, "named-1", "named", starter);
  EXPECT_EQ(recorded::completed_result(h), "one+two");

  worker::WorkflowInstance instance("named", starter);
  auto first = instance.apply(recorded::through_task(h, 1));
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_EQ(first->commands.size(), 2u);
  const auto& schedule = first->commands[0].schedule_activity_task();
  EXPECT_EQ(from_payload<recorded::braced::Order>(schedule.input().payloads(0), "input").note,
            "a note long enough to live on the heap");
  EXPECT_EQ(schedule.retry_policy().maximum_attempts(), 3);
}

}  // namespace
}  // namespace reprise
