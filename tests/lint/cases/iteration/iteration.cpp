// reprise-unordered-iteration (a warning) and reprise-pointer-order (an
// error): iteration order that is not the same on every run.
#include <algorithm>
#include <functional>
#include <map>
#include <queue>
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

// Ordering pointers through the library orders them by address, as `a < b`
// on pointers does: std::less<T*> handed to a sort, a priority queue of
// pointers (its default comparator is std::less<T*>).
reprise::Workflow<int> orders_through_library(reprise::WorkflowContext&, std::vector<int> ids) {
  std::vector<Item> items;
  for (int id : ids) items.push_back({id});
  std::vector<Item*> pointers;
  for (auto& item : items) pointers.push_back(&item);
  std::sort(pointers.begin(), pointers.end(), std::less<Item*>());           // expect: reprise-pointer-order
  std::priority_queue<Item*> next;                                           // expect: reprise-pointer-order
  std::priority_queue<Item*, std::vector<Item*>, std::greater<Item*>> last;  // expect: reprise-pointer-order
  for (Item* item : pointers) next.push(item), last.push(item);
  co_return next.top()->id + last.top()->id;
}

// Negative: the same library ordering values and stable ids.
reprise::Workflow<int> orders_values_through_library(reprise::WorkflowContext&, std::vector<int> ids) {
  std::sort(ids.begin(), ids.end(), std::less<int>());
  std::priority_queue<int, std::vector<int>, std::greater<int>> smallest;
  for (int id : ids) smallest.push(id);
  std::vector<Item> items;
  for (int id : ids) items.push_back({id});
  std::vector<Item*> pointers;
  for (auto& item : items) pointers.push_back(&item);
  std::sort(pointers.begin(), pointers.end(), [](const Item* a, const Item* b) { return a->id < b->id; });
  co_return smallest.top() + pointers.front()->id;
}

// Negative: an ordered map keyed by value, and a sorted copy of the keys.
reprise::Workflow<int> ordered(reprise::WorkflowContext&, std::vector<std::string> names) {
  std::map<std::string, int> counts;
  for (const auto& n : names) counts[n]++;
  int total = 0;
  for (const auto& [name, count] : counts) total = total * 31 + count;
  co_return total;
}
