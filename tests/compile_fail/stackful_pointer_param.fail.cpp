#include "prelude.hpp"
#include "reprise/stackful.hpp"
// A stackful workflow's parameters travel through history too.
std::string checkout(reprise::StackfulContext&, const Order* o) { return o->id; }
inline constexpr reprise::WorkflowDef<&checkout> checkout_wf{"checkout"};
// expect: workflow parameters must be Serializable
