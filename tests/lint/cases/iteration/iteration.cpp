// reprise-unordered-iteration (a warning) and reprise-pointer-order (an
// error): iteration order that is not the same on every run.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "reprise/workflow.hpp"

struct Item {
  int id;
};

reprise::Workflow<int> unordered(reprise::WorkflowContext&, std::vector<std::string> names) {
  std::unordered_map<std::string, int> counts;
  for (const auto& n : names) counts[n]++;
  int first = 0;
  for (const auto& [name, count] : counts) first = first * 31 + count;  // expect: reprise-unordered-iteration
  co_return first;
}

reprise::Workflow<int> by_pointer(reprise::WorkflowContext&, std::vector<int> ids) {
  std::vector<Item> items;
  for (int id : ids) items.push_back({id});
  std::set<const Item*> seen;
  for (const auto& item : items) seen.insert(&item);
  int order = 0;
  for (const Item* item : seen) order = order * 31 + item->id;  // expect: reprise-pointer-order
  co_return order;
}

// Negative: an ordered map keyed by value, and a sorted copy of the keys.
reprise::Workflow<int> ordered(reprise::WorkflowContext&, std::vector<std::string> names) {
  std::map<std::string, int> counts;
  for (const auto& n : names) counts[n]++;
  int total = 0;
  for (const auto& [name, count] : counts) total = total * 31 + count;
  co_return total;
}
