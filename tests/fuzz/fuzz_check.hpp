// How a harness reports a broken property: it prints what broke and aborts,
// which libFuzzer (and the replay driver) take as a finding. A bad input
// answered with an error is not a finding; a wrong answer, a crash or a hang
// is.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(condition, ...)                                 \
  do {                                                             \
    if (!(condition)) {                                            \
      std::fprintf(stderr, "fuzz check failed: %s: ", #condition); \
      std::fprintf(stderr, __VA_ARGS__);                           \
      std::fputc('\n', stderr);                                    \
      std::abort();                                                \
    }                                                              \
  } while (0)
