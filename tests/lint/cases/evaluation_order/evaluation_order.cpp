// reprise-evaluation-order: work started in two operands whose order C++
// leaves to the compiler; none where C++17 fixes the order.
#include <chrono>
#include <string>
#include <utility>

#include "reprise/activity.hpp"
#include "reprise/stackful.hpp"
#include "reprise/workflow.hpp"

using namespace std::chrono_literals;

std::string reserve(reprise::ActivityContext&, std::string item) { return item; }
constexpr reprise::Activity<&reserve> reserve_activity{"reserve"};
const auto kOptions = reprise::ActivityOptions::start_to_close(10s);

std::string both(const std::string& a, const std::string& b) { return a + b; }

// A helper that starts an activity: its calls start work too.
std::string reserve_now(reprise::StackfulContext& ctx, const std::string& item) {
  return ctx.execute(reserve_activity, kOptions, item).get();
}

std::string stackful_order(reprise::StackfulContext& ctx, std::string a, std::string b) {
  auto first = ctx.execute(reserve_activity, kOptions, a);
  auto second = ctx.execute(reserve_activity, kOptions, b);
  std::string joined = both(first.get(), second.get());                   // expect: reprise-evaluation-order
  std::string again = both(reserve_now(ctx, a), reserve_now(ctx, b));     // expect: reprise-evaluation-order
  auto pair = std::make_pair(ctx.execute(reserve_activity, kOptions, a),  // expect: reprise-evaluation-order
                             ctx.execute(reserve_activity, kOptions, b));
  return joined + again + pair.first.get() + pair.second.get();  // expect: reprise-evaluation-order
}

// Negative: one statement each, and the orders C++17 fixes: `<<` chains,
// assignment, braced lists, `&&`, `||` and the comma.
struct Trail {
  std::string text;
  Trail& operator<<(const std::string& s) {
    text += s;
    return *this;
  }
};
struct Pair {
  std::string a, b;
};
std::string stackful_sequenced(reprise::StackfulContext& ctx, std::string a, std::string b) {
  std::string first = reserve_now(ctx, a);
  std::string second = reserve_now(ctx, b);
  Trail trail;
  trail << reserve_now(ctx, a) << reserve_now(ctx, b);
  std::string assigned;
  assigned = reserve_now(ctx, a);
  Pair braced{reserve_now(ctx, a), reserve_now(ctx, b)};
  bool both_empty = reserve_now(ctx, a).empty() && reserve_now(ctx, b).empty();
  std::string last = (reserve_now(ctx, a), reserve_now(ctx, b));
  // One operand starts work, the other only computes.
  std::string mixed = both(reserve_now(ctx, a), a + b);
  return first + second + trail.text + assigned + braced.a + braced.b + last + mixed + (both_empty ? "" : "x");
}

inline constexpr reprise::WorkflowDef<&stackful_order> stackful_order_wf{"stackful_order"};
inline constexpr reprise::WorkflowDef<&stackful_sequenced> stackful_sequenced_wf{"stackful_sequenced"};

// Stackless: two co_awaits in one call, two draws from ctx.random() in one sum.
long total(std::string a, std::string b) { return static_cast<long>(a.size() + b.size()); }
reprise::Workflow<long> stackless_order(reprise::WorkflowContext& ctx, std::string a, std::string b) {
  long sum = total(co_await ctx.execute(reserve_activity, kOptions, a),  // expect: reprise-evaluation-order
                   co_await ctx.execute(reserve_activity, kOptions, b));
  long draw = static_cast<long>(ctx.random() % 6 + ctx.random() % 6);  // expect: reprise-evaluation-order
  co_return sum + draw;
}

// Negative: a coroutine helper starts nothing until it is awaited, and
// ctx.now() only reads the recorded time.
reprise::Task<std::string> reserve_later(reprise::WorkflowContext& ctx, std::string item) {
  co_return co_await ctx.execute(reserve_activity, kOptions, item);
}
reprise::Workflow<long> stackless_sequenced(reprise::WorkflowContext& ctx, std::string a, std::string b) {
  auto later_a = reserve_later(ctx, a);
  auto later_b = reserve_later(ctx, b);
  std::string ra = co_await std::move(later_a);
  std::string rb = co_await std::move(later_b);
  long elapsed = (ctx.now() - ctx.now()).count();
  co_return total(ra, rb) + elapsed;
}
