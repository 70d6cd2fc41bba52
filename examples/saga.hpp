// money transfer saga: withdraw, then deposit; when the deposit fails for
// good, the withdrawal is compensated by a refund, and the workflow fails
// with the deposit's reason.
#pragma once

#include <string>

#include "reprise/activity.hpp"
#include "reprise/workflow.hpp"

namespace examples {

using namespace std::chrono_literals;

struct Transfer {
  std::string from;
  std::string to;
  int64_t cents = 0;
  MSGPACK_DEFINE_MAP(from, to, cents);
};

inline std::string withdraw(reprise::ActivityContext&, Transfer t) {
  return "withdrew " + std::to_string(t.cents) + " from " + t.from;
}
inline std::string deposit(reprise::ActivityContext&, Transfer t) {
  if (t.to.rfind("closed-", 0) == 0) {
    throw reprise::ApplicationError("AccountClosed", "account " + t.to + " is closed", /*non_retryable=*/true);
  }
  return "deposited " + std::to_string(t.cents) + " to " + t.to;
}
inline std::string refund(reprise::ActivityContext&, Transfer t) {
  return "refunded " + std::to_string(t.cents) + " to " + t.from;
}
inline constexpr reprise::Activity<&withdraw> withdraw_activity{"withdraw"};
inline constexpr reprise::Activity<&deposit> deposit_activity{"deposit"};
inline constexpr reprise::Activity<&refund> refund_activity{"refund"};

inline reprise::Workflow<std::string> transfer(reprise::WorkflowContext& ctx, Transfer t) {
  const auto options = reprise::ActivityOptions::start_to_close(10s).maximum_attempts(3);
  const std::string withdrawn = co_await ctx.execute(withdraw_activity, options, t);
  std::string failure;
  try {
    co_return withdrawn + ", " + co_await ctx.execute(deposit_activity, options, t);
  } catch (const reprise::ActivityError& e) {
    failure = e.what();
  }
  // Compensate in a scope a cancel cannot interrupt: the money must go back.
  auto cleanup = ctx.non_cancellable();
  const std::string refunded = co_await cleanup.execute(refund_activity, options, t);
  ctx.log(refunded);
  throw reprise::ApplicationError("TransferFailed", failure + "; " + refunded, true);
}
inline constexpr reprise::WorkflowDef<&transfer> transfer_wf{"transfer"};

}  // namespace examples
