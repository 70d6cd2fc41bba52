// reprise-evaluation-order: work a workflow starts (an activity, a timer, a
// draw from ctx.random(), a wait) in two operands whose order C++ leaves to
// the compiler, so history records them in an order another build may not
// repeat. The collector records each such place with what its operands
// call; the check decides over the whole program which of those calls start
// work (a helper that calls ctx.execute does).
#pragma once

#include <clang/AST/Expr.h>
#include <clang/Basic/SourceManager.h>

#include <map>
#include <vector>

#include "lint/facts.hpp"

namespace reprise::lint {

// The operands of `e` that C++17 evaluates in an order of the compiler's
// choosing: a call's (or a parenthesized construction's) arguments, the two
// sides of `+`, `==`, `&`... Empty where the order is fixed: `<<` and `>>`,
// assignments, braced lists, `&&`, `||`, the comma, subscripts.
std::vector<const clang::Expr*> unsequenced_operands(const clang::Expr* e);

// Whether `e` itself starts workflow work: a co_await, a call of a non-const
// member of the workflow context (execute, sleep, random, side_effect...) or
// a stackful future's get().
bool starts_work(const clang::Expr* e);

// What one operand starts directly and which user functions it calls (lambda
// bodies aside: a lambda written there is not run there).
Operand operand_work(const clang::Expr* operand, const clang::SourceManager& sm);

// For each function, its places where two operands or more start work, as
// reprise-evaluation-order hazards.
std::map<std::string, std::vector<Hazard>> evaluation_order_hazards(const Program& program);

}  // namespace reprise::lint
