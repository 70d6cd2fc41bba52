#include "prelude.hpp"
reprise::Workflow<int64_t> total(reprise::WorkflowContext&, Order o) { co_return o.cents; }
