// Workflows that use libstdc++ 12's <ranges> views. clang 14 cannot parse
// that header's views (the linter exited 2, "could not parse"); clang 19
// can. Pure views over the workflow's own data are deterministic: clean. A
// view's lambda is workflow code like any other lambda: checked.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <ranges>
#include <string>
#include <vector>

#include "reprise/workflow.hpp"

struct Line {
  std::string sku;
  int quantity = 0;
};

int doubled(int quantity) { return 2 * quantity; }

reprise::Workflow<int> ranges_clean(reprise::WorkflowContext&, std::vector<Line> lines) {
  auto wanted = lines | std::views::filter([](const Line& line) { return line.quantity > 0; }) |
                std::views::transform([](const Line& line) { return doubled(line.quantity); });
  int total = 0;
  for (int quantity : wanted) total += quantity;
  std::map<std::string, int> by_sku{{"a", 1}, {"b", 2}};
  for (const auto& sku : std::views::keys(by_sku)) total += static_cast<int>(sku.size());
  for (int i : std::views::iota(0, 3) | std::views::reverse | std::views::take(2)) total += i;
  total += static_cast<int>(std::ranges::count_if(lines, [](const Line& line) { return line.sku.empty(); }));
  co_return total;
}

reprise::Workflow<int> ranges_jitter(reprise::WorkflowContext&, std::vector<int> delays) {
  int total = 0;
  for (int delay : delays | std::views::transform([](int d) { return d + std::rand() % 3; }))  // expect: reprise-random
    total += delay;
  co_return total;
}
