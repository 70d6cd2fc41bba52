// long-running loop: a poller that would run forever keeps its history
// small by continuing as new, carrying its state, when history grows past
// the suggested size (or every `batch` rounds, so the demo shows it).
#pragma once

#include "reprise/activity.hpp"
#include "reprise/workflow.hpp"

namespace examples {

using namespace std::chrono_literals;

struct Tally {
  int64_t rounds = 0;
  int64_t runs = 1;
  MSGPACK_DEFINE_MAP(rounds, runs);
};

inline int64_t poll_feed(reprise::ActivityContext&, int64_t round) { return round % 3; }
inline constexpr reprise::Activity<&poll_feed> poll_feed_activity{"poll_feed"};

inline reprise::Workflow<Tally> feed_loop(reprise::WorkflowContext& ctx, Tally tally, int64_t total, int64_t batch);
inline constexpr reprise::WorkflowDef<&feed_loop> feed_loop_wf{"feed_loop"};
inline reprise::Workflow<Tally> feed_loop(reprise::WorkflowContext& ctx, Tally tally, int64_t total, int64_t batch) {
  for (int64_t i = 0; i < batch && tally.rounds < total; ++i) {
    co_await ctx.execute(poll_feed_activity, reprise::ActivityOptions::start_to_close(10s), tally.rounds);
    ++tally.rounds;
    if (ctx.info().continue_as_new_suggested) break;
  }
  if (tally.rounds < total) {
    ++tally.runs;
    co_await ctx.continue_as_new(feed_loop_wf, tally, total, batch);
  }
  co_return tally;
}

}  // namespace examples
