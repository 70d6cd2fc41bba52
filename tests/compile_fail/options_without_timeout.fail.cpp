#include "prelude.hpp"
reprise::ActivityOptions options;  // no timeout
// expect: ActivityOptions
// expect-gcc: is private within this context
// expect-clang: calling a private constructor
