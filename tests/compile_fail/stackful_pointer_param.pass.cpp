#include "prelude.hpp"
#include "reprise/stackful.hpp"
// A stackful workflow's parameters travel through history too.
std::string checkout(reprise::StackfulContext&, Order o) { return o.id; }
inline constexpr reprise::WorkflowDef<&checkout> checkout_wf{"checkout"};
