// The stackful style (reprise/stackful.hpp): hello, the money-transfer saga
// and the long loop again, as plain functions on stacks of their own. The
// activities, handles and history are the same as the stackless versions';
// the helpers that wait are ordinary functions.
#pragma once

#include <string>

#include "examples/hello.hpp"
#include "examples/long_loop.hpp"
#include "examples/saga.hpp"
#include "reprise/stackful.hpp"

namespace examples {

inline std::string hello_stackful(reprise::StackfulContext& ctx, std::string name) {
  return ctx.execute(greet_activity, reprise::ActivityOptions::start_to_close(10s), name).get();
}
inline constexpr reprise::WorkflowDef<&hello_stackful> hello_stackful_wf{"hello_stackful"};

// A helper that waits, without being a coroutine: puts the money back and
// fails the transfer.
[[noreturn]] inline void compensate(reprise::StackfulContext& ctx, const Transfer& t,
                                    const reprise::ActivityOptions& options, const std::string& failure) {
  auto cleanup = ctx.non_cancellable();
  const std::string refunded = cleanup.execute(refund_activity, options, t).get();
  ctx.log(refunded);
  throw reprise::ApplicationError("TransferFailed", failure + "; " + refunded, true);
}

inline std::string transfer_stackful(reprise::StackfulContext& ctx, Transfer t) {
  const auto options = reprise::ActivityOptions::start_to_close(10s).maximum_attempts(3);
  const std::string withdrawn = ctx.execute(withdraw_activity, options, t).get();
  try {
    return withdrawn + ", " + ctx.execute(deposit_activity, options, t).get();
  } catch (const reprise::ActivityError& e) {
    compensate(ctx, t, options, e.what());
  }
}
inline constexpr reprise::WorkflowDef<&transfer_stackful> transfer_stackful_wf{"transfer_stackful"};

inline Tally feed_loop_stackful(reprise::StackfulContext& ctx, Tally tally, int64_t total, int64_t batch);
inline constexpr reprise::WorkflowDef<&feed_loop_stackful> feed_loop_stackful_wf{"feed_loop_stackful"};
inline Tally feed_loop_stackful(reprise::StackfulContext& ctx, Tally tally, int64_t total, int64_t batch) {
  for (int64_t i = 0; i < batch && tally.rounds < total; ++i) {
    (void)ctx.execute(poll_feed_activity, reprise::ActivityOptions::start_to_close(10s), tally.rounds).get();
    ++tally.rounds;
    if (ctx.info().continue_as_new_suggested) break;
  }
  if (tally.rounds < total) {
    ++tally.runs;
    ctx.continue_as_new(feed_loop_stackful_wf, tally, total, batch);
  }
  return tally;
}

}  // namespace examples
