// Reads one translation unit and records the facts of every function whose
// body it sees outside system headers and the SDK: what it calls and what it
// does that breaks replay (facts.hpp). The whole-program check is analysis.hpp.
#pragma once

#include <clang/Tooling/Tooling.h>

#include <memory>
#include <vector>

#include "lint/facts.hpp"

namespace reprise::lint {

// A factory for ClangTool::run: each translation unit it parses adds its
// facts to `out`.
std::unique_ptr<clang::tooling::FrontendActionFactory> make_collector(UnitFacts& out);

}  // namespace reprise::lint
