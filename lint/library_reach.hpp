// The user-written functions a standard-library (or any system-header)
// template instantiation calls: the visitor std::visit invokes, the functor
// std::accumulate applies, the operator< std::sort compares with. The
// library's own code is walked only to find them; its calls are matched
// against the rules by name where the user's code makes them, never here.
//
// One per translation unit, used on the thread that parses it. The
// declarations it returns live as long as the unit's ASTContext.
#pragma once

#include <clang/AST/Decl.h>
#include <clang/Basic/SourceManager.h>

#include <map>
#include <vector>

namespace reprise::lint {

class LibraryReach {
 public:
  explicit LibraryReach(const clang::SourceManager& sm) : sm_(sm) {}

  // The functions outside system headers and the SDK that a call of `fn`
  // (declared in a system header) reaches through library code alone.
  const std::vector<const clang::FunctionDecl*>& user_functions(const clang::FunctionDecl* fn);

 private:
  // What one library function's (or static table's) code refers to.
  struct Direct {
    std::vector<const clang::FunctionDecl*> user;
    std::vector<const clang::Decl*> library;  // functions and variables to walk in turn
  };
  const Direct& direct(const clang::Decl* decl);

  const clang::SourceManager& sm_;
  std::map<const clang::Decl*, Direct> direct_;
  std::map<const clang::FunctionDecl*, std::vector<const clang::FunctionDecl*>> reached_;
};

}  // namespace reprise::lint
