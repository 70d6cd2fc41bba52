#include "lint/evaluation_order.hpp"

#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>

#include <deque>
#include <set>

#include "lint/decl_names.hpp"

namespace reprise::lint {

using namespace clang;

namespace {

// Built-in and overloaded binary operators alike: C++17 gives an overloaded
// operator the sequencing of the built-in one.
bool unsequenced(BinaryOperatorKind op) {
  switch (op) {
    case BO_Mul:
    case BO_Div:
    case BO_Rem:
    case BO_Add:
    case BO_Sub:
    case BO_LT:
    case BO_GT:
    case BO_LE:
    case BO_GE:
    case BO_EQ:
    case BO_NE:
    case BO_Cmp:
    case BO_And:
    case BO_Xor:
    case BO_Or:
      return true;
    default:
      return false;
  }
}

const char* const kContexts[] = {"reprise::WorkflowContext", "reprise::StackfulContext"};

class OperandVisitor : public RecursiveASTVisitor<OperandVisitor> {
 public:
  OperandVisitor(const SourceManager& sm, Operand& out) : sm_(sm), out_(out) {}

  bool TraverseLambdaExpr(LambdaExpr*) { return true; }

  bool VisitExpr(Expr* e) {
    if (out_.work.empty() && starts_work(e)) {
      const auto* call = dyn_cast<CallExpr>(e);
      out_.work = call != nullptr ? qualified_name(call->getDirectCallee()) : "co_await";
    }
    const FunctionDecl* callee = nullptr;
    if (const auto* call = dyn_cast<CallExpr>(e)) callee = call->getDirectCallee();
    if (const auto* construct = dyn_cast<CXXConstructExpr>(e)) callee = construct->getConstructor();
    if (callee != nullptr && !in_system_header(callee, sm_) && !in_sdk(callee)) {
      out_.callee_keys.push_back(function_key(callee, sm_));
      out_.callee_names.push_back(qualified_name(callee));
    }
    return true;
  }

 private:
  const SourceManager& sm_;
  Operand& out_;
};

}  // namespace

std::vector<const Expr*> unsequenced_operands(const Expr* e) {
  std::vector<const Expr*> operands;
  if (const auto* op = dyn_cast<BinaryOperator>(e)) {
    if (unsequenced(op->getOpcode())) operands = {op->getLHS(), op->getRHS()};
  } else if (const auto* op = dyn_cast<CXXOperatorCallExpr>(e)) {
    if (op->getOperator() == OO_Call) {
      operands.assign(op->arg_begin() + 1, op->arg_end());  // the callee object comes first
    } else if (op->getNumArgs() == 2 && op->isInfixBinaryOp() &&
               unsequenced(BinaryOperator::getOverloadedOpcode(op->getOperator()))) {
      operands = {op->getArg(0), op->getArg(1)};
    }
  } else if (const auto* call = dyn_cast<CallExpr>(e)) {
    operands.assign(call->arg_begin(), call->arg_end());
  } else if (const auto* construct = dyn_cast<CXXConstructExpr>(e)) {
    if (!construct->isListInitialization()) operands.assign(construct->arg_begin(), construct->arg_end());
  }
  std::erase_if(operands, [](const Expr* operand) { return isa<CXXDefaultArgExpr>(operand); });
  return operands;
}

bool starts_work(const Expr* e) {
  if (isa<CoawaitExpr>(e)) return true;
  const auto* call = dyn_cast<CXXMemberCallExpr>(e);
  const CXXMethodDecl* method = call != nullptr ? call->getMethodDecl() : nullptr;
  if (method == nullptr || method->isConst()) return false;
  std::string owner = qualified_name(method->getParent());
  if (owner == "reprise::Blocking") return method->getName() == "get";
  for (const char* context : kContexts) {
    if (owner == context) return true;
  }
  return false;
}

Operand operand_work(const Expr* operand, const SourceManager& sm) {
  Operand out;
  OperandVisitor(sm, out).TraverseStmt(const_cast<Expr*>(operand));
  return out;
}

std::map<std::string, std::vector<Hazard>> evaluation_order_hazards(const Program& program) {
  // The functions whose call starts work: those that do it themselves, and
  // their callers, up to (not through) a coroutine, which starts nothing
  // until it is awaited.
  std::map<std::string, std::vector<const FunctionFacts*>> callers;
  std::deque<const FunctionFacts*> pending;
  for (const auto& [key, fn] : program.functions) {
    for (const auto& call : fn.calls) callers[call.callee_key].push_back(&fn);
    if (fn.starts_work && !fn.coroutine) pending.push_back(&fn);
  }
  std::set<std::string> working;
  for (const auto* fn : pending) working.insert(fn->key);
  while (!pending.empty()) {
    const FunctionFacts* fn = pending.front();
    pending.pop_front();
    if (fn->coroutine) continue;
    for (const FunctionFacts* caller : callers[fn->key]) {
      if (working.insert(caller->key).second) pending.push_back(caller);
    }
  }

  std::map<std::string, std::vector<Hazard>> hazards;
  for (const auto& [key, fn] : program.functions) {
    for (const auto& site : fn.order_sites) {
      std::vector<std::string> started;
      for (const auto& operand : site.operands) {
        if (!operand.work.empty()) {
          started.push_back(operand.work);
          continue;
        }
        for (size_t i = 0; i < operand.callee_keys.size(); ++i) {
          if (working.count(operand.callee_keys[i]) != 0) {
            started.push_back(operand.callee_names[i]);
            break;
          }
        }
      }
      if (started.size() < 2) continue;
      hazards[key].push_back(Hazard{"reprise-evaluation-order",
                                    "starts " + started[0] + " and " + started[1] + " in an order the compiler chooses",
                                    "", site.where, site.suppressed});
    }
  }
  return hazards;
}

}  // namespace reprise::lint
