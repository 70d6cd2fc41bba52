// Names and classifications of clang declarations, as the rules and the
// config spell them.
#pragma once

#include <clang/AST/Decl.h>
#include <clang/Basic/SourceManager.h>

#include <string>

#include "lint/facts.hpp"

namespace reprise::lint {

// "std::chrono::system_clock::now", "orders::checkout": namespaces and classes
// without template arguments or inline namespaces (std::__cxx11, _V2).
std::string qualified_name(const clang::NamedDecl* decl);

// The key that names one function in every translation unit (its USR).
std::string function_key(const clang::FunctionDecl* fn, const clang::SourceManager& sm);

// Where a source location is, with macros resolved to where they are used.
Location location_of(clang::SourceLocation loc, const clang::SourceManager& sm);

bool in_system_header(const clang::Decl* decl, const clang::SourceManager& sm);

// Declared in namespace reprise: the SDK, which the linter trusts.
bool in_sdk(const clang::Decl* decl);

// `reprise::Workflow<T> f(...)`: a stackless workflow root.
bool returns_workflow(const clang::FunctionDecl* fn);

// The function a `reprise::WorkflowDef<&fn>` type names, if `type` is one.
const clang::FunctionDecl* workflow_handle_target(clang::QualType type);

// `R f(reprise::ActivityContext&, ...)`: an activity function.
bool is_activity_function(const clang::FunctionDecl* fn);

}  // namespace reprise::lint
