#include "lint/decl_names.hpp"

#include <clang/AST/DeclCXX.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/Index/USRGeneration.h>
#include <llvm/ADT/SmallString.h>

#include <algorithm>
#include <vector>

namespace reprise::lint {

using namespace clang;

std::string qualified_name(const NamedDecl* decl) {
  std::vector<std::string> parts{decl->getNameAsString()};
  for (const DeclContext* ctx = decl->getDeclContext(); ctx != nullptr; ctx = ctx->getParent()) {
    if (const auto* ns = dyn_cast<NamespaceDecl>(ctx)) {
      if (ns->isInline()) continue;
      parts.push_back(ns->isAnonymousNamespace() ? "(anonymous)" : ns->getName().str());
    } else if (const auto* record = dyn_cast<CXXRecordDecl>(ctx)) {
      parts.push_back(record->isLambda() ? "(lambda)" : record->getNameAsString());
    } else if (const auto* fn = dyn_cast<FunctionDecl>(ctx)) {
      parts.push_back(fn->getNameAsString());
    }
  }
  std::reverse(parts.begin(), parts.end());
  std::string name;
  for (const auto& part : parts) {
    if (!name.empty()) name += "::";
    name += part;
  }
  return name;
}

Location location_of(SourceLocation loc, const SourceManager& sm) {
  loc = sm.getExpansionLoc(loc);
  Location where;
  if (OptionalFileEntryRef file = sm.getFileEntryRefForID(sm.getFileID(loc))) {
    auto real = file->getFileEntry().tryGetRealPathName();
    where.file = real.empty() ? file->getName().str() : real.str();
  } else {
    where.file = "<unknown>";
  }
  where.line = sm.getExpansionLineNumber(loc);
  where.column = sm.getExpansionColumnNumber(loc);
  return where;
}

std::string function_key(const FunctionDecl* fn, const SourceManager& sm) {
  llvm::SmallString<128> usr;
  if (!index::generateUSRForDecl(fn, usr)) return usr.str().str();
  auto where = location_of(fn->getLocation(), sm);
  return "loc:" + where.file + ":" + std::to_string(where.line) + ":" + std::to_string(where.column);
}

bool in_system_header(const Decl* decl, const SourceManager& sm) {
  return sm.isInSystemHeader(sm.getExpansionLoc(decl->getLocation()));
}

bool in_sdk(const Decl* decl) {
  const NamespaceDecl* outermost = nullptr;
  for (const DeclContext* ctx = decl->getDeclContext(); ctx != nullptr; ctx = ctx->getParent()) {
    if (const auto* ns = dyn_cast<NamespaceDecl>(ctx)) outermost = ns;
  }
  return outermost != nullptr && outermost->getName() == "reprise";
}

namespace {

bool is_sdk_class(QualType type, const char* name) {
  const auto* record = type.getNonReferenceType()->getAsCXXRecordDecl();
  return record != nullptr && qualified_name(record) == name;
}

bool first_parameter_is(const FunctionDecl* fn, const char* name) {
  if (fn->getNumParams() == 0) return false;
  QualType type = fn->getParamDecl(0)->getType();
  return type->isLValueReferenceType() && is_sdk_class(type, name);
}

}  // namespace

bool returns_workflow(const FunctionDecl* fn) { return is_sdk_class(fn->getReturnType(), "reprise::Workflow"); }

const FunctionDecl* workflow_handle_target(QualType type) {
  const auto* spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(type->getAsCXXRecordDecl());
  if (spec == nullptr || spec->getTemplateArgs().size() != 1 || qualified_name(spec) != "reprise::WorkflowDef") {
    return nullptr;
  }
  const TemplateArgument& arg = spec->getTemplateArgs()[0];
  return arg.getKind() == TemplateArgument::Declaration ? dyn_cast<FunctionDecl>(arg.getAsDecl()) : nullptr;
}

bool is_activity_function(const FunctionDecl* fn) { return first_parameter_is(fn, "reprise::ActivityContext"); }

}  // namespace reprise::lint
