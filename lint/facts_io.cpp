#include "lint/facts_io.hpp"

#include <nlohmann/json.hpp>

namespace reprise::lint {

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Location, file, line, column)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Hazard, rule, what, callee, where, suppressed)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Call, callee_key, callee_name, where, suppressed, followed, through,
                                   virtual_dispatch, closed_hierarchy)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Operand, work, callee_keys, callee_names)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(OrderSite, where, suppressed, operands)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(FunctionFacts, key, name, where, returns_workflow, suppressed, calls, hazards,
                                   starts_work, coroutine, order_sites)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(VirtualMethod, name, pure, overrides)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(UnitFacts, functions, registered_workflows, virtual_methods)

std::string serialize(const UnitFacts& unit) { return nlohmann::json(unit).dump(); }

UnitFacts deserialize(const std::string& text) { return nlohmann::json::parse(text).get<UnitFacts>(); }

}  // namespace reprise::lint
