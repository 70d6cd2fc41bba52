// UnitFacts as text, so a child process that parsed some units can hand
// their facts to the parent that checks the whole program (parse_units.hpp).
#pragma once

#include <string>

#include "lint/facts.hpp"

namespace reprise::lint {

std::string serialize(const UnitFacts& unit);

// Throws nlohmann::json::exception on text serialize() did not write.
UnitFacts deserialize(const std::string& text);

}  // namespace reprise::lint
