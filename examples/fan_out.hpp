// fan-out/fan-in: a parent starts one child workflow per part, all at once,
// and sums what they return.
#pragma once

#include <vector>

#include "reprise/activity.hpp"
#include "reprise/workflow.hpp"

namespace examples {

using namespace std::chrono_literals;

inline int64_t count_words(reprise::ActivityContext&, std::string text) {
  int64_t words = 0;
  bool in_word = false;
  for (char c : text) {
    const bool letter = c != ' ' && c != '\n';
    if (letter && !in_word) ++words;
    in_word = letter;
  }
  return words;
}
inline constexpr reprise::Activity<&count_words> count_words_activity{"count_words"};

inline reprise::Workflow<int64_t> count_part(reprise::WorkflowContext& ctx, std::string part) {
  co_return co_await ctx.execute(count_words_activity, reprise::ActivityOptions::start_to_close(10s), part);
}
inline constexpr reprise::WorkflowDef<&count_part> count_part_wf{"count_part"};

inline reprise::Workflow<int64_t> count_all(reprise::WorkflowContext& ctx, std::vector<std::string> parts) {
  std::vector<reprise::ChildWorkflowFuture<int64_t>> children;
  for (const std::string& part : parts) {
    children.push_back(ctx.execute_child(count_part_wf, reprise::ChildWorkflowOptions(), part));
  }
  int64_t total = 0;
  for (auto& child : children) total += co_await child;
  co_return total;
}
inline constexpr reprise::WorkflowDef<&count_all> count_all_wf{"count_all"};

}  // namespace examples
