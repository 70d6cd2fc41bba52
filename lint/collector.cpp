#include "lint/collector.hpp"

#include <clang/AST/ASTConsumer.h>
#include <clang/AST/ASTContext.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Index/USRGeneration.h>
#include <llvm/ADT/SmallString.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "lint/decl_names.hpp"
#include "lint/evaluation_order.hpp"
#include "lint/library_reach.hpp"
#include "lint/paths.hpp"
#include "lint/rules.hpp"
#include "lint/suppressions.hpp"

namespace reprise::lint {

using namespace clang;

namespace {

// The suppression comments of every file of one translation unit, read once.
class CommentIndex {
 public:
  explicit CommentIndex(const SourceManager& sm) : sm_(sm) {}

  Suppressions at(SourceLocation loc) {
    loc = sm_.getExpansionLoc(loc);
    FileID file = sm_.getFileID(loc);
    auto it = files_.find(file);
    if (it == files_.end()) it = files_.emplace(file, SuppressionComments(sm_.getBufferData(file))).first;
    return it->second.at(sm_.getExpansionLineNumber(loc));
  }

 private:
  const SourceManager& sm_;
  std::map<FileID, SuppressionComments> files_;
};

// The expression whose storage an lvalue expression names: `g` for `g.x[3]`.
const DeclRefExpr* storage_root(const Expr* e) {
  while (e != nullptr) {
    e = e->IgnoreParenImpCasts();
    if (const auto* ref = dyn_cast<DeclRefExpr>(e)) return ref;
    if (const auto* member = dyn_cast<MemberExpr>(e)) {
      e = member->getBase();
    } else if (const auto* subscript = dyn_cast<ArraySubscriptExpr>(e)) {
      e = subscript->getBase();
    } else if (const auto* unary = dyn_cast<UnaryOperator>(e); unary && unary->getOpcode() == UO_Deref) {
      e = unary->getSubExpr();
    } else if (const auto* op = dyn_cast<CXXOperatorCallExpr>(e);
               op && op->getNumArgs() > 0 &&
               (op->getOperator() == OO_Subscript || op->getOperator() == OO_Arrow || op->getOperator() == OO_Star)) {
      e = op->getArg(0);
    } else {
      return nullptr;
    }
  }
  return nullptr;
}

// How chains name a function: qualified, or where a lambda is written.
std::string display_name(const FunctionDecl* fn, const SourceManager& sm) {
  if (const auto* method = dyn_cast<CXXMethodDecl>(fn); method && method->getParent()->isLambda()) {
    auto where = location_of(method->getParent()->getBeginLoc(), sm);
    return "lambda at " + display_path(where.file) + ":" + std::to_string(where.line);
  }
  return qualified_name(fn);
}

bool is_mutable_reference(QualType type) {
  return type->isReferenceType() && !type.getNonReferenceType().isConstQualified();
}

// An expression C++ evaluates where it is used, not where it is written: a
// default member initializer, a default argument. The linter keeps it as a
// function of its own, called from each place that uses it.
struct ImplicitExpression {
  std::string key;
  std::string name;
  SourceLocation written;
  const Expr* expr = nullptr;
};

// Records the facts of one function's own body. Nested lambdas are functions
// of their own: the body gets a call to them, not their contents.
class BodyVisitor : public RecursiveASTVisitor<BodyVisitor> {
 public:
  BodyVisitor(ASTContext& ast, CommentIndex& comments, LibraryReach& library, FunctionFacts& facts,
              std::vector<ImplicitExpression>& used)
      : ast_(ast), sm_(ast.getSourceManager()), comments_(comments), library_(library), facts_(facts), used_(used) {}

  // A function's own code: what its constructor initializers run (written
  // or implicit: members' and bases' constructors, default member
  // initializers), its body, and what its destructor runs after the body
  // (members' and bases' destructors). Default arguments are not its code:
  // they run at each call that uses them.
  void traverse_function(FunctionDecl* fn) {
    if (auto* ctor = dyn_cast<CXXConstructorDecl>(fn)) {
      for (CXXCtorInitializer* init : ctor->inits()) {
        if (init->getInit() == nullptr) continue;
        member_init_ = init->getInit()->IgnoreImplicit();
        TraverseStmt(init->getInit());
      }
      member_init_ = nullptr;
    }
    if (fn->hasBody()) TraverseStmt(fn->getBody());
    facts_.coroutine = fn->getBody() != nullptr && isa<CoroutineBodyStmt>(fn->getBody());
    if (auto* dtor = dyn_cast<CXXDestructorDecl>(fn)) add_member_destructor_calls(dtor->getParent(), fn->getLocation());
  }

  // The semantic form has what the syntactic one leaves out: the default
  // member initializers and constructors of members an aggregate
  // initialization does not name.
  bool TraverseInitListExpr(InitListExpr* list, DataRecursionQueue* = nullptr) {
    InitListExpr* semantic = list->isSemanticForm() ? list : list->getSemanticForm();
    if (semantic == nullptr) semantic = list;
    if (const auto* record = semantic->getType()->getAsCXXRecordDecl(); record && semantic != member_init_) {
      add_destructor_call(record, list->getBeginLoc());
    }
    for (Stmt* child : semantic->children()) TraverseStmt(child);
    return true;
  }

  // `co_await x` calls x's operator co_await (if any) and the awaiter's
  // await_ready, await_suspend and await_resume: a user awaitable's are
  // followed like any call. Their object is the awaiter itself (an opaque
  // value), so the operand is traversed once.
  bool TraverseCoawaitExpr(CoawaitExpr* await, DataRecursionQueue* = nullptr) {
    facts_.starts_work = true;
    TraverseStmt(await->getOperand());
    if (const auto* common = dyn_cast<CallExpr>(await->getCommonExpr()->IgnoreImplicit());
        common != nullptr && common != await->getOperand()->IgnoreImplicit() && common->getDirectCallee() != nullptr) {
      on_callee(common->getDirectCallee(), await->getBeginLoc(), /*is_call=*/true);
    }
    for (Expr* step : {await->getReadyExpr(), await->getSuspendExpr(), await->getResumeExpr()}) {
      if (step != nullptr) TraverseStmt(step);
    }
    return true;
  }

  bool VisitExpr(Expr* e) {
    if (starts_work(e)) facts_.starts_work = true;
    check_evaluation_order(e);
    return true;
  }

  bool VisitCXXDefaultInitExpr(CXXDefaultInitExpr* init) {
    const FieldDecl* field = init->getField();
    if (init->getExpr() == nullptr) return true;
    llvm::SmallString<128> usr;
    if (index::generateUSRForDecl(field, usr)) return true;
    use_implicit({"init:" + usr.str().str(), "the default initializer of " + qualified_name(field),
                  field->getInClassInitializer()->getBeginLoc(), init->getExpr()},
                 init->getBeginLoc());
    return true;
  }

  bool VisitCXXDefaultArgExpr(CXXDefaultArgExpr* arg) {
    const ParmVarDecl* param = arg->getParam();
    const auto* fn = dyn_cast<FunctionDecl>(param->getDeclContext());
    if (fn == nullptr || arg->getExpr() == nullptr || in_system_header(fn, sm_) || in_sdk(fn)) return true;
    use_implicit({function_key(fn, sm_) + "#default-arg" + std::to_string(param->getFunctionScopeIndex()),
                  "the default argument '" + param->getNameAsString() + "' of " + qualified_name(fn),
                  param->getDefaultArgRange().getBegin(), arg->getExpr()},
                 arg->getUsedLocation());
    return true;
  }

  bool TraverseLambdaExpr(LambdaExpr* lambda) {
    for (const auto& init : lambda->capture_inits()) {
      if (init != nullptr) TraverseStmt(init);
    }
    if (!lambda->getCallOperator()->isDependentContext() && exempt_.count(lambda) == 0) {
      add_call(lambda->getCallOperator(), lambda->getBeginLoc());
    }
    return true;
  }

  bool VisitCallExpr(CallExpr* call) {
    const FunctionDecl* callee = call->getDirectCallee();
    if (const auto* ref = dyn_cast<DeclRefExpr>(call->getCallee()->IgnoreParenImpCasts())) called_refs_.insert(ref);
    if (callee == nullptr) {
      if (!call->isTypeDependent() && !call_through_table(call)) {
        add_hazard("reprise-unresolved", "calls through a function pointer", "", call);
      }
      return true;
    }
    if (is_side_effect(callee)) exempt_recorded_callables(call);
    if (rule_for_callee(qualified_name(callee))) {
      // The call is the finding (locking a global mutex): not also a write
      // of what it is called on.
      if (const auto* member_call = dyn_cast<CXXMemberCallExpr>(call)) cover(member_call->getImplicitObjectArgument());
      for (const Expr* arg : call->arguments()) cover(arg);
    }
    mark_written_arguments(callee, call->arguments(), isa<CXXOperatorCallExpr>(call) && isa<CXXMethodDecl>(callee));
    bool dispatch = false;
    if (const auto* member_call = dyn_cast<CXXMemberCallExpr>(call)) {
      check_member_call(member_call);
      dispatch = is_virtual_dispatch(member_call);
    }
    if (const auto* op = dyn_cast<CXXOperatorCallExpr>(call); op && op->getNumArgs() > 0) {
      const auto* method = dyn_cast<CXXMethodDecl>(callee);
      if (method != nullptr && !method->isConst()) mark_written(op->getArg(0));
    }
    size_t before = facts_.calls.size();
    on_callee(callee, call->getBeginLoc(), /*is_call=*/true);
    if (dispatch && facts_.calls.size() > before) mark_dispatch(facts_.calls[before], cast<CXXMethodDecl>(callee));
    return true;
  }

  bool VisitCXXConstructExpr(CXXConstructExpr* construct) {
    const CXXConstructorDecl* ctor = construct->getConstructor();
    if (rule_for_callee(qualified_name(ctor))) {
      for (const Expr* arg : construct->arguments()) cover(arg);  // std::lock_guard of a global mutex
    }
    mark_written_arguments(ctor, construct->arguments(), false);
    check_activity_handle(construct);
    check_pointer_ordering(construct->getType(), construct);
    on_callee(ctor, construct->getBeginLoc(), /*is_call=*/true);
    // A member or base built by a constructor is destroyed by the destructor.
    if (construct != member_init_) add_destructor_call(ctor->getParent(), construct->getBeginLoc());
    return true;
  }

  // `delete p` with a virtual destructor runs the dynamic type's destructor.
  bool VisitCXXDeleteExpr(CXXDeleteExpr* del) {
    const auto* record = del->getDestroyedType()->getAsCXXRecordDecl();
    if (record == nullptr) return true;
    size_t before = facts_.calls.size();
    add_destructor_call(record, del->getBeginLoc());
    const CXXDestructorDecl* dtor = record->hasDefinition() ? record->getDestructor() : nullptr;
    if (dtor != nullptr && dtor->isVirtual() && !record->hasAttr<FinalAttr>() && facts_.calls.size() > before) {
      mark_dispatch(facts_.calls[before], dtor);
    }
    return true;
  }

  bool VisitBinaryOperator(BinaryOperator* op) {
    if (op->isAssignmentOp()) mark_written(op->getLHS());
    bool ordering = op->isRelationalOp() || op->getOpcode() == BO_Cmp;
    if (ordering && op->getLHS()->getType()->isPointerType() && op->getRHS()->getType()->isPointerType()) {
      add_hazard("reprise-address", "orders pointers by address", "", op);
    }
    return true;
  }

  bool VisitUnaryOperator(UnaryOperator* op) {
    if (op->isIncrementDecrementOp() || op->getOpcode() == UO_AddrOf) mark_written(op->getSubExpr());
    return true;
  }

  bool VisitVarDecl(VarDecl* var) {
    if (var->hasInit() && is_mutable_reference(var->getType())) mark_written(var->getInit());
    return true;
  }

  bool VisitExplicitCastExpr(ExplicitCastExpr* cast) {
    if (cast->getSubExpr()->getType()->isPointerType() && cast->getType()->isIntegralType(ast_)) {
      add_hazard("reprise-address", "casts a pointer to an integer", "", cast);
    }
    return true;
  }

  bool VisitCXXForRangeStmt(CXXForRangeStmt* loop) {
    check_iteration(loop->getRangeInit()->getType(), loop->getRangeInit());
    return true;
  }

  bool VisitDeclRefExpr(DeclRefExpr* ref) {
    if (exempt_.count(ref) != 0) return true;
    if (const auto* fn = dyn_cast<FunctionDecl>(ref->getDecl())) {
      // A function named but not called here (a callback, std::sort's
      // comparator) may be called: follow it.
      if (called_refs_.count(ref) == 0 && !is_activity_function(fn)) on_callee(fn, ref->getBeginLoc(), false);
      return true;
    }
    const auto* var = dyn_cast<VarDecl>(ref->getDecl());
    if (var == nullptr || !var->hasGlobalStorage()) return true;
    std::string name = qualified_name(var);
    // The C library's globals, also when the program declares one itself
    // (`extern char** environ;`).
    bool declared_by_program = var->getDeclContext()->isTranslationUnit() && var->getDefinition() == nullptr;
    if (in_system_header(var, sm_) || declared_by_program) {
      if (auto rule_id = rule_for_system_global(name)) {
        add_hazard(std::string(*rule_id), "uses " + name, name, ref);
      }
      return true;
    }
    if (in_sdk(var) || var->isConstexpr() || var->getType().getNonReferenceType().isConstQualified()) return true;
    if (covered_.count(ref) != 0) return true;
    if (written_.count(ref) != 0) {
      add_hazard("reprise-global-write", "writes the global '" + name + "'", "", ref);
    } else {
      add_hazard("reprise-global-read", "reads the global '" + name + "'", "", ref);
    }
    return true;
  }

 private:
  void on_callee(const FunctionDecl* callee, SourceLocation loc, bool is_call, const std::string& through = "") {
    std::string name = qualified_name(callee);
    bool system = in_system_header(callee, sm_);
    if (name.rfind("reprise::detail::WorkflowCore::", 0) == 0 ||
        name.rfind("reprise::v1::ScheduleActivityTaskCommandAttributes::", 0) == 0) {
      add_hazard("reprise-untyped-activity", "calls " + name, name, loc);
      return;
    }
    // Plain C names ("open", "time") match only the C library's functions.
    if (auto rule_id = rule_for_callee(name); rule_id && (system || name.find("::") != std::string::npos)) {
      add_hazard(std::string(*rule_id), "calls " + name, name, loc);
      return;
    }
    if (hashes_pointer(callee)) {
      add_hazard("reprise-address", "hashes a pointer", name, loc);
      return;
    }
    if (name == "std::function::operator()" || name == "std::move_only_function::operator()") {
      add_hazard("reprise-unresolved", "calls through " + name.substr(0, name.rfind("::")), name, loc);
    }
    if (is_activity_function(callee)) {
      if (is_call) add_hazard("reprise-direct-activity", "calls the activity function " + name, name, loc);
      return;
    }
    add_call(callee, loc, /*followed=*/!system && !in_sdk(callee), through);
    if (system) add_library_calls(callee, loc);
  }

  // The user's functions a library instantiation calls (a visitor, a
  // functor, an operator< a sort compares with) are called from here.
  void add_library_calls(const FunctionDecl* library_fn, SourceLocation loc) {
    for (const FunctionDecl* user : library_.user_functions(library_fn)) {
      if (is_activity_function(user)) continue;
      add_call(user, loc, /*followed=*/true, qualified_name(library_fn));
    }
  }

  // What is constructed is destroyed: follow a user-written destructor (the
  // rules already matched the constructor of a library type).
  void add_destructor_call(const CXXRecordDecl* record, SourceLocation loc) {
    if (!record->hasDefinition() || record->hasTrivialDestructor()) return;
    const CXXDestructorDecl* dtor = record->getDestructor();
    if (dtor == nullptr || in_sdk(dtor)) return;
    if (in_system_header(dtor, sm_)) {
      add_library_calls(dtor, loc);  // a container's destructor destroys the user's elements
    } else {
      add_call(dtor, loc);
    }
  }

  // A destructor, after its body, destroys the members and bases.
  void add_member_destructor_calls(const CXXRecordDecl* record, SourceLocation loc) {
    for (const FieldDecl* field : record->fields()) {
      if (const auto* member = ast_.getBaseElementType(field->getType())->getAsCXXRecordDecl()) {
        add_destructor_call(member, loc);
      }
    }
    for (const CXXBaseSpecifier& base : record->bases()) {
      if (const auto* base_record = base.getType()->getAsCXXRecordDecl()) add_destructor_call(base_record, loc);
    }
  }

  void use_implicit(ImplicitExpression expression, SourceLocation use) {
    facts_.calls.push_back(Call{expression.key, expression.name, location_of(use, sm_), comments_.at(use), true, ""});
    used_.push_back(std::move(expression));
  }

  void add_call(const FunctionDecl* callee, SourceLocation loc, bool followed = true, std::string through = "") {
    facts_.calls.push_back(Call{function_key(callee, sm_), display_name(callee, sm_), location_of(loc, sm_),
                                comments_.at(loc), followed, std::move(through)});
  }

  template <typename Node>
  void add_hazard(std::string rule_id, std::string what, std::string callee, const Node* node) {
    add_hazard(std::move(rule_id), std::move(what), std::move(callee), node->getBeginLoc());
  }
  void add_hazard(std::string rule_id, std::string what, std::string callee, SourceLocation loc) {
    facts_.hazards.push_back(
        Hazard{std::move(rule_id), std::move(what), std::move(callee), location_of(loc, sm_), comments_.at(loc)});
  }

  void cover(const Expr* e) {
    if (const auto* root = storage_root(e)) covered_.insert(root);
  }

  // ctx.side_effect(f) records f's result in history: the callable written
  // in the call is the documented place for a non-deterministic value, so
  // it is not followed.
  static bool is_side_effect(const FunctionDecl* callee) {
    std::string name = qualified_name(callee);
    return in_sdk(callee) && name.size() > 13 && name.compare(name.size() - 13, 13, "::side_effect") == 0;
  }
  void exempt_recorded_callables(const CallExpr* call) {
    for (const Expr* arg : call->arguments()) {
      const Expr* callable = arg->IgnoreImplicit();
      if (const auto* construct = dyn_cast<CXXConstructExpr>(callable); construct && construct->getNumArgs() == 1) {
        callable = construct->getArg(0)->IgnoreImplicit();  // the copy into side_effect's parameter
      }
      if (isa<LambdaExpr>(callable) || isa<DeclRefExpr>(callable)) exempt_.insert(callable);
    }
  }

  void mark_written(const Expr* e) {
    if (const auto* root = storage_root(e)) written_.insert(root);
  }

  // Arguments bound to non-const reference parameters may be written.
  template <typename Args>
  void mark_written_arguments(const FunctionDecl* callee, Args args, bool skip_object) {
    unsigned index = 0;
    for (const Expr* arg : args) {
      unsigned param = skip_object ? index - 1 : index;
      if (!(skip_object && index == 0) && param < callee->getNumParams() &&
          is_mutable_reference(callee->getParamDecl(param)->getType())) {
        mark_written(arg);
      }
      ++index;
    }
  }

  void check_member_call(const CXXMemberCallExpr* call) {
    const CXXMethodDecl* method = call->getMethodDecl();
    if (method == nullptr) return;
    const Expr* object = call->getImplicitObjectArgument();
    if (!method->isConst() && !method->isStatic()) mark_written(object);
    if (method->getDeclName().isIdentifier() && (method->getName() == "begin" || method->getName() == "cbegin")) {
      check_iteration(object->getType(), object);
    }
  }

  // A call that runs whichever override the object's dynamic type has: not
  // qualified (Base::f()), not on an object named by value, not final. The
  // SDK's virtual functions are trusted.
  bool is_virtual_dispatch(const CXXMemberCallExpr* call) const {
    const CXXMethodDecl* method = call->getMethodDecl();
    if (method == nullptr || !method->isVirtual() || in_sdk(method) || method->hasAttr<FinalAttr>() ||
        method->getParent()->hasAttr<FinalAttr>()) {
      return false;
    }
    const auto* member = dyn_cast<MemberExpr>(call->getCallee()->IgnoreParenImpCasts());
    if (member != nullptr && member->hasQualifier()) return false;
    const Expr* base = call->getImplicitObjectArgument()->IgnoreParenImpCasts();
    bool by_value = isa<DeclRefExpr>(base) && !cast<DeclRefExpr>(base)->getDecl()->getType()->isReferenceType() &&
                    !base->getType()->isPointerType();
    return !by_value;
  }

  // The analysis follows every override of the callee (analysis.cpp); a
  // class defined in this unit's own source file can only be derived from
  // here, so this unit has seen all of them.
  void mark_dispatch(Call& call, const CXXMethodDecl* method) const {
    const CXXRecordDecl* record = method->getParent();
    call.virtual_dispatch = true;
    call.closed_hierarchy =
        record->isInAnonymousNamespace() || sm_.isInMainFile(sm_.getExpansionLoc(record->getLocation()));
  }

  // `table[i](...)` on a constant table of function pointers (constexpr, or
  // const with its initializer in sight): each function whose address the
  // table holds may be the one called. False when the pointer may hold
  // anything else.
  bool call_through_table(const CallExpr* call) {
    const Expr* callee = call->getCallee()->IgnoreParenImpCasts();
    if (const auto* deref = dyn_cast<UnaryOperator>(callee); deref && deref->getOpcode() == UO_Deref) {
      callee = deref->getSubExpr()->IgnoreParenImpCasts();
    }
    if (isa<DeclRefExpr>(callee)) return false;  // a plain pointer variable, not a table
    const DeclRefExpr* root = storage_root(callee);
    const auto* table = root != nullptr ? dyn_cast<VarDecl>(root->getDecl()) : nullptr;
    if (table == nullptr || !(table->isConstexpr() || table->getType().isConstant(ast_))) return false;
    const Expr* init = table->getAnyInitializer();
    if (init == nullptr) return false;
    TableEntries entries;
    entries.TraverseStmt(const_cast<Expr*>(init));
    if (entries.other_variables || entries.functions.empty()) return false;
    std::string through = "the table '" + table->getNameAsString() + "'";
    for (const FunctionDecl* fn : entries.functions) on_callee(fn, call->getBeginLoc(), /*is_call=*/true, through);
    return true;
  }

  // The functions a table's initializer names, and whether it also names a
  // variable (whose value the linter does not track).
  struct TableEntries : RecursiveASTVisitor<TableEntries> {
    bool VisitDeclRefExpr(DeclRefExpr* ref) {
      if (const auto* fn = dyn_cast<FunctionDecl>(ref->getDecl())) {
        functions.push_back(fn);
      } else if (isa<VarDecl>(ref->getDecl())) {
        other_variables = true;
      }
      return true;
    }
    std::vector<const FunctionDecl*> functions;
    bool other_variables = false;
  };

  // Operands evaluated in an order the compiler chooses, kept when two of
  // them or more call something (whether that starts work is decided over
  // the whole program).
  void check_evaluation_order(const Expr* e) {
    auto operands = unsequenced_operands(e);
    if (operands.size() < 2 || e->isInstantiationDependent()) return;
    OrderSite site;
    for (const Expr* operand : operands) {
      Operand work = operand_work(operand, sm_);
      if (!work.work.empty() || !work.callee_keys.empty()) site.operands.push_back(std::move(work));
    }
    if (site.operands.size() < 2) return;
    site.where = location_of(e->getBeginLoc(), sm_);
    site.suppressed = comments_.at(e->getBeginLoc());
    facts_.order_sites.push_back(std::move(site));
  }

  // Iterating std::unordered_* (order differs between runs) or a container
  // keyed by pointer (order follows addresses).
  void check_iteration(QualType type, const Expr* where) {
    const auto* spec =
        dyn_cast_or_null<ClassTemplateSpecializationDecl>(type.getNonReferenceType()->getAsCXXRecordDecl());
    if (spec == nullptr || spec->getTemplateArgs().size() == 0) return;
    std::string name = qualified_name(spec);
    bool unordered = name.rfind("std::unordered_", 0) == 0;
    bool ordered = name == "std::map" || name == "std::set" || name == "std::multimap" || name == "std::multiset";
    if (!unordered && !ordered) return;
    const TemplateArgument& key = spec->getTemplateArgs()[0];
    bool pointer_key = key.getKind() == TemplateArgument::Type && key.getAsType()->isPointerType();
    if (pointer_key) {
      add_hazard("reprise-pointer-order", "iterates a " + name + " keyed by pointer", "", where);
    } else if (unordered) {
      add_hazard("reprise-unordered-iteration", "iterates a " + name, "", where);
    }
  }

  // A comparator that orders pointers (std::less<T*>, handed to std::sort or
  // a container) or a priority queue of pointers: the order follows
  // addresses, as `a < b` on pointers does.
  void check_pointer_ordering(QualType type, const Expr* where) {
    const auto* spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(type->getAsCXXRecordDecl());
    if (spec == nullptr) return;
    std::string name = qualified_name(spec);
    if (orders_pointers(spec)) {
      add_hazard("reprise-pointer-order", "orders pointers by address with " + name, "", where);
    } else if (name == "std::priority_queue" && spec->getTemplateArgs().size() == 3) {
      const TemplateArgument& compare = spec->getTemplateArgs()[2];
      const auto* compare_spec =
          compare.getKind() == TemplateArgument::Type
              ? dyn_cast_or_null<ClassTemplateSpecializationDecl>(compare.getAsType()->getAsCXXRecordDecl())
              : nullptr;
      if (compare_spec != nullptr && orders_pointers(compare_spec)) {
        add_hazard("reprise-pointer-order", "keeps pointers in a std::priority_queue ordered by address", "", where);
      }
    }
  }

  static bool orders_pointers(const ClassTemplateSpecializationDecl* spec) {
    std::string name = qualified_name(spec);
    if (name != "std::less" && name != "std::greater" && name != "std::less_equal" && name != "std::greater_equal") {
      return false;
    }
    const TemplateArgument& arg = spec->getTemplateArgs()[0];
    return arg.getKind() == TemplateArgument::Type && arg.getAsType()->isPointerType();
  }

  // std::hash<T*>::operator(): a result that follows addresses.
  static bool hashes_pointer(const FunctionDecl* fn) {
    const auto* method = dyn_cast<CXXMethodDecl>(fn);
    if (method == nullptr) return false;
    const auto* spec = dyn_cast<ClassTemplateSpecializationDecl>(method->getParent());
    if (spec == nullptr || spec->getTemplateArgs().size() == 0 || qualified_name(spec) != "std::hash") return false;
    const TemplateArgument& arg = spec->getTemplateArgs()[0];
    return arg.getKind() == TemplateArgument::Type && arg.getAsType()->isPointerType();
  }

  // reprise::Activity<&fn>{name} with a name computed at run time: history
  // would record whatever the string held.
  void check_activity_handle(const CXXConstructExpr* construct) {
    const CXXRecordDecl* record = construct->getConstructor()->getParent();
    if (construct->getNumArgs() != 1 || qualified_name(record) != "reprise::Activity") return;
    const Expr* name = construct->getArg(0);
    if (name->getType()->isRecordType()) return;  // the copy constructor
    if (!isa<StringLiteral>(name->IgnoreParenImpCasts()) && !name->isCXX11ConstantExpr(ast_)) {
      add_hazard("reprise-untyped-activity", "names an activity with a run-time string", "", construct);
    }
  }

  ASTContext& ast_;
  const SourceManager& sm_;
  CommentIndex& comments_;
  LibraryReach& library_;
  FunctionFacts& facts_;
  std::vector<ImplicitExpression>& used_;
  const Expr* member_init_ = nullptr;  // the constructor initializer being traversed
  std::set<const DeclRefExpr*> written_;
  std::set<const DeclRefExpr*> covered_;  // the object or argument of a call that is itself a finding
  std::set<const Expr*> exempt_;          // callables handed to ctx.side_effect
  std::set<const DeclRefExpr*> called_refs_;
};

// Walks a translation unit for function bodies: definitions, template
// instantiations and lambdas, skipping system headers and the SDK.
class UnitVisitor : public RecursiveASTVisitor<UnitVisitor> {
 public:
  UnitVisitor(ASTContext& ast, UnitFacts& out)
      : ast_(ast), sm_(ast.getSourceManager()), comments_(sm_), library_(sm_), out_(out) {}

  bool shouldVisitTemplateInstantiations() const { return true; }

  bool TraverseDecl(Decl* decl) {
    if (decl == nullptr || isa<TranslationUnitDecl>(decl)) return RecursiveASTVisitor::TraverseDecl(decl);
    if (in_system_header(decl, sm_)) return true;
    if (const auto* ns = dyn_cast<NamespaceDecl>(decl); ns && ns->getName() == "reprise") return true;
    return RecursiveASTVisitor::TraverseDecl(decl);
  }

  bool VisitFunctionDecl(FunctionDecl* fn) {
    if (fn->doesThisDeclarationHaveABody() && !fn->isDependentContext() && !fn->isImplicit() && !in_sdk(fn)) {
      collect(fn, fn->getBeginLoc());
    }
    return true;
  }

  // Special members the compiler wrote (a constructor that builds the
  // members, a destructor that destroys them) are defined where they are
  // used; they are followed like written ones.
  bool VisitCXXRecordDecl(CXXRecordDecl* record) {
    if (!record->hasDefinition() || record->isDependentContext() || in_sdk(record)) return true;
    for (Decl* member : record->decls()) {
      auto* fn = dyn_cast<FunctionDecl>(member);
      if (fn != nullptr && fn->isImplicit() && fn->doesThisDeclarationHaveABody()) collect(fn, fn->getBeginLoc());
    }
    for (const CXXMethodDecl* method : record->methods()) {
      if (!method->isVirtual()) continue;
      VirtualMethod& facts = out_.virtual_methods[function_key(method, sm_)];
      facts.name = qualified_name(method);
      facts.pure = method->isPureVirtual();
      for (const CXXMethodDecl* overridden : method->overridden_methods()) {
        facts.overrides.push_back(function_key(overridden, sm_));
      }
    }
    return true;
  }

  bool VisitLambdaExpr(LambdaExpr* lambda) {
    CXXMethodDecl* op = lambda->getCallOperator();
    if (!op->isDependentContext() && !in_sdk(op)) collect(op, lambda->getBeginLoc());
    return true;
  }

  // `reprise::WorkflowDef<&fn> handle{"name"}`: fn is a workflow, whatever
  // its style.
  bool VisitVarDecl(VarDecl* var) {
    if (const FunctionDecl* fn = workflow_handle_target(var->getType())) {
      out_.registered_workflows.insert(function_key(fn, sm_));
    }
    return true;
  }

 private:
  void collect(FunctionDecl* fn, SourceLocation start) {
    std::string key = function_key(fn, sm_);
    if (!seen_.insert(key).second) return;
    FunctionFacts facts;
    facts.key = key;
    facts.where = location_of(fn->getLocation(), sm_);
    facts.name = display_name(fn, sm_);
    facts.returns_workflow = returns_workflow(fn);
    // A comment above the function, or above its template header.
    facts.suppressed = comments_.at(start);
    if (const FunctionDecl* pattern = fn->getTemplateInstantiationPattern()) {
      if (const auto* tmpl = pattern->getDescribedFunctionTemplate()) {
        auto above = comments_.at(tmpl->getBeginLoc());
        facts.suppressed.insert(above.begin(), above.end());
      }
    }
    std::vector<ImplicitExpression> used;
    BodyVisitor body(ast_, comments_, library_, facts, used);
    body.traverse_function(fn);
    out_.functions.push_back(std::move(facts));
    collect_implicit(std::move(used));
  }

  void collect_implicit(std::vector<ImplicitExpression> pending) {
    while (!pending.empty()) {
      ImplicitExpression expression = std::move(pending.back());
      pending.pop_back();
      if (!seen_.insert(expression.key).second) continue;
      FunctionFacts facts;
      facts.key = expression.key;
      facts.name = expression.name;
      facts.where = location_of(expression.written, sm_);
      facts.suppressed = comments_.at(expression.written);
      BodyVisitor body(ast_, comments_, library_, facts, pending);
      body.TraverseStmt(const_cast<Expr*>(expression.expr));
      out_.functions.push_back(std::move(facts));
    }
  }

  ASTContext& ast_;
  const SourceManager& sm_;
  CommentIndex comments_;
  LibraryReach library_;
  UnitFacts& out_;
  std::set<std::string> seen_;
};

class CollectConsumer : public ASTConsumer {
 public:
  explicit CollectConsumer(UnitFacts& out) : out_(out) {}
  void HandleTranslationUnit(ASTContext& ast) override {
    UnitVisitor visitor(ast, out_);
    visitor.TraverseDecl(ast.getTranslationUnitDecl());
  }

 private:
  UnitFacts& out_;
};

class CollectAction : public ASTFrontendAction {
 public:
  explicit CollectAction(UnitFacts& out) : out_(out) {}
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance&, llvm::StringRef) override {
    return std::make_unique<CollectConsumer>(out_);
  }

 private:
  UnitFacts& out_;
};

class CollectFactory : public tooling::FrontendActionFactory {
 public:
  explicit CollectFactory(UnitFacts& out) : out_(out) {}
  std::unique_ptr<FrontendAction> create() override { return std::make_unique<CollectAction>(out_); }

 private:
  UnitFacts& out_;
};

}  // namespace

std::unique_ptr<tooling::FrontendActionFactory> make_collector(UnitFacts& out) {
  return std::make_unique<CollectFactory>(out);
}

}  // namespace reprise::lint
