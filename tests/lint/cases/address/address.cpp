// reprise-address: results that follow where objects happen to live.
#include <cstdint>
#include <functional>
#include <vector>

#include "reprise/workflow.hpp"

struct Leg {
  int id;
};

reprise::Workflow<long> by_address(reprise::WorkflowContext&, std::vector<int> ids) {
  std::vector<Leg> legs;
  for (int id : ids) legs.push_back({id});
  const Leg* a = &legs.front();
  const Leg* b = &legs.back();
  long result = a < b ? 1 : 0;                                           // expect: reprise-address
  result += static_cast<long>(reinterpret_cast<std::uintptr_t>(a) % 7);  // expect: reprise-address
  result += static_cast<long>(std::hash<const Leg*>{}(b) % 3);           // expect: reprise-address
  co_return result;
}

// Negative: equality of pointers and comparisons of ids.
reprise::Workflow<long> by_id(reprise::WorkflowContext&, std::vector<int> ids) {
  std::vector<Leg> legs;
  for (int id : ids) legs.push_back({id});
  const Leg* a = &legs.front();
  const Leg* b = &legs.back();
  co_return (a == b ? 1 : 0) + (a->id < b->id ? 1 : 0);
}
