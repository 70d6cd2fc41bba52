#include "lint/library_reach.hpp"

#include <clang/AST/DeclCXX.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>

#include <deque>
#include <set>

#include "lint/decl_names.hpp"

namespace reprise::lint {

using namespace clang;

namespace {

// Library code that can call the user's: instantiated from a template (a
// function template, a member of a class template, one the compiler wrote
// for a class template's specialization, a lambda). A non-template library
// function cannot name a user function.
bool instantiated(const FunctionDecl* fn) {
  if (fn->getTemplateInstantiationPattern() != nullptr) return true;
  const auto* method = dyn_cast<CXXMethodDecl>(fn);
  if (method == nullptr) return false;
  const CXXRecordDecl* parent = method->getParent();
  return parent->isLambda() || isa<ClassTemplateSpecializationDecl>(parent) ||
         parent->getTemplateInstantiationPattern() != nullptr;
}

// Everything a library body refers to, implicit code included (the
// destructors it runs, the semantic form of its initializer lists).
class ReferenceCollector : public RecursiveASTVisitor<ReferenceCollector> {
 public:
  explicit ReferenceCollector(std::set<const Decl*>& out) : out_(out) {}

  bool shouldVisitImplicitCode() const { return true; }
  bool shouldVisitTemplateInstantiations() const { return true; }

  bool VisitCallExpr(CallExpr* call) {
    if (const FunctionDecl* callee = call->getDirectCallee()) out_.insert(callee);
    return true;
  }
  bool VisitCXXConstructExpr(CXXConstructExpr* construct) {
    out_.insert(construct->getConstructor());
    add_destructor(construct->getType());
    return true;
  }
  bool VisitCXXDeleteExpr(CXXDeleteExpr* del) {
    add_destructor(del->getDestroyedType());
    return true;
  }
  bool VisitCXXDestructorDecl(CXXDestructorDecl* dtor) {
    for (const FieldDecl* field : dtor->getParent()->fields()) add_destructor(field->getType());
    for (const CXXBaseSpecifier& base : dtor->getParent()->bases()) add_destructor(base.getType());
    return true;
  }
  // A function named (a pointer put in a dispatch table, as std::visit's)
  // or a static table whose initializer names them.
  bool VisitDeclRefExpr(DeclRefExpr* ref) {
    if (const auto* fn = dyn_cast<FunctionDecl>(ref->getDecl())) out_.insert(fn);
    if (const auto* var = dyn_cast<VarDecl>(ref->getDecl()); var && var->hasGlobalStorage() && var->hasInit()) {
      out_.insert(var);
    }
    return true;
  }

 private:
  void add_destructor(QualType type) {
    const auto* record = type.isNull() ? nullptr : type->getBaseElementTypeUnsafe()->getAsCXXRecordDecl();
    if (record != nullptr && record->hasDefinition() && !record->hasTrivialDestructor()) {
      if (const CXXDestructorDecl* dtor = record->getDestructor()) out_.insert(dtor);
    }
  }

  std::set<const Decl*>& out_;
};

}  // namespace

const LibraryReach::Direct& LibraryReach::direct(const Decl* decl) {
  auto [it, fresh] = direct_.try_emplace(decl);
  if (!fresh) return it->second;
  std::set<const Decl*> refs;
  ReferenceCollector collector(refs);
  if (const auto* var = dyn_cast<VarDecl>(decl)) {
    collector.TraverseStmt(const_cast<Expr*>(var->getInit()));
  } else {
    collector.TraverseDecl(const_cast<Decl*>(decl));
  }
  Direct& facts = it->second;
  for (const Decl* ref : refs) {
    if (in_sdk(ref)) continue;
    const auto* fn = dyn_cast<FunctionDecl>(ref);
    if (!in_system_header(ref, sm_)) {
      if (fn != nullptr) facts.user.push_back(fn);
    } else if (fn == nullptr || instantiated(fn)) {
      facts.library.push_back(ref);
    }
  }
  return facts;
}

const std::vector<const FunctionDecl*>& LibraryReach::user_functions(const FunctionDecl* fn) {
  auto [it, fresh] = reached_.try_emplace(fn);
  if (!fresh || !instantiated(fn)) return it->second;
  std::set<const Decl*> seen{fn};
  std::set<const FunctionDecl*> found;
  std::deque<const Decl*> queue{fn};
  while (!queue.empty()) {
    const Decl* decl = queue.front();
    queue.pop_front();
    if (const auto* library_fn = dyn_cast<FunctionDecl>(decl)) {
      const FunctionDecl* definition = library_fn->getDefinition();
      if (definition == nullptr) continue;
      decl = definition;
    }
    const Direct& facts = direct(decl);
    for (const FunctionDecl* user : facts.user) {
      if (found.insert(user).second) it->second.push_back(user);
    }
    for (const Decl* next : facts.library) {
      if (seen.insert(next).second) queue.push_back(next);
    }
  }
  return it->second;
}

}  // namespace reprise::lint
