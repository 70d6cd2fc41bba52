#include "prelude.hpp"
reprise::Workflow<int64_t> total(reprise::WorkflowContext&, Order o) {
  co_return o.id;  // a string from a Workflow<int64_t>
}
// expect: co_return of a value that does not convert to the T of Workflow<T> or Task<T>
