#include "prelude.hpp"
reprise::LocalActivityOptions options;  // no timeout
// expect: LocalActivityOptions
// expect-gcc: is private within this context
// expect-clang: calling a private constructor
