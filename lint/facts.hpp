// What reprise-lint learns about each function, one translation unit at a
// time. Facts from every unit are merged by key (the clang USR, stable across
// units), then checked over the whole program (analysis.hpp).
#pragma once

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace reprise::lint {

struct Location {
  std::string file;
  unsigned line = 0;
  unsigned column = 0;

  bool operator<(const Location& other) const {
    return std::tie(file, line, column) < std::tie(other.file, other.line, other.column);
  }
  bool operator==(const Location&) const = default;
};

// Rule ids silenced by `// reprise-lint: ignore[...]` comments; "*" silences all.
using Suppressions = std::set<std::string>;

inline bool silences(const Suppressions& suppressions, const std::string& rule) {
  return suppressions.count("*") != 0 || suppressions.count(rule) != 0;
}

// Something in a function's own body that breaks replay: a clock read, a
// write to a global, a blocking call...
struct Hazard {
  std::string rule;
  std::string what;    // "std::chrono::system_clock::now", "global 'counter'"
  std::string callee;  // the qualified name when it is a call (the config matches it)
  Location where;
  Suppressions suppressed;
};

// A call (or a reference that may become one) from a function's body.
struct Call {
  std::string callee_key;
  std::string callee_name;
  Location where;
  Suppressions suppressed;
  bool followed = true;  // false for functions the linter does not look into (std, the SDK)
  // The library function that makes this call on the user's behalf
  // ("std::visit"), when the user's code does not make it itself.
  std::string through;
  // A virtual call: every override of the callee in the program may run.
  bool virtual_dispatch = false;
  // The callee's class is defined in the unit's own source file (or an
  // anonymous namespace): no other unit can derive from it, so the unit
  // that makes the call sees every override.
  bool closed_hierarchy = false;
};

// A virtual member function, as its class definition declares it (with or
// without a body in this unit): what class-hierarchy analysis needs.
struct VirtualMethod {
  std::string name;
  bool pure = false;
  std::vector<std::string> overrides;  // keys of the methods it overrides directly
};

// One operand of a call or operator whose operands the compiler may
// evaluate in any order (evaluation_order.hpp).
struct Operand {
  std::string work;                      // the work it starts itself: "reprise::WorkflowContext::execute"
  std::vector<std::string> callee_keys;  // the user functions it calls, which may start work
  std::vector<std::string> callee_names;
};

struct OrderSite {
  Location where;
  Suppressions suppressed;
  std::vector<Operand> operands;
};

struct FunctionFacts {
  std::string key;
  std::string name;  // qualified, without parameters: "orders::checkout"
  Location where;
  bool returns_workflow = false;  // reprise::Workflow<T>: a stackless workflow
  Suppressions suppressed;        // by a comment above the function
  std::vector<Call> calls;
  std::vector<Hazard> hazards;
  // Its body starts workflow work (evaluation_order.hpp); a coroutine's
  // call starts nothing, its body runs when it is awaited.
  bool starts_work = false;
  bool coroutine = false;
  std::vector<OrderSite> order_sites;  // where its operands' order matters
};

// What one translation unit contributes.
struct UnitFacts {
  std::vector<FunctionFacts> functions;
  // Functions named by a reprise::WorkflowDef<&fn> handle: how a stackful
  // workflow (a plain function) is told from its helpers.
  std::set<std::string> registered_workflows;
  std::map<std::string, VirtualMethod> virtual_methods;
};

// The whole program: every function whose body some translation unit saw.
struct Program {
  std::map<std::string, FunctionFacts> functions;
  std::set<std::string> registered_workflows;
  std::map<std::string, VirtualMethod> virtual_methods;

  // The first unit to see a function (one defined in a header is seen by
  // many, identically) provides its facts.
  void merge(UnitFacts unit) {
    for (auto& f : unit.functions) functions.try_emplace(f.key, std::move(f));
    registered_workflows.merge(unit.registered_workflows);
    virtual_methods.merge(unit.virtual_methods);
  }

  // Where the checks start: every stackless workflow, and every function a
  // workflow handle names.
  bool is_root(const FunctionFacts& fn) const { return fn.returns_workflow || registered_workflows.count(fn.key) != 0; }
};

}  // namespace reprise::lint
