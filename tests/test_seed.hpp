// The seed of a randomized test: the one in the environment variable named
// by the test, to replay a failure, or else a fresh one. Printed either way,
// with the line that replays it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>

namespace reprise {

inline uint64_t test_seed(const char* env_var) {
  uint64_t seed = 0;
  if (const char* given = std::getenv(env_var); given != nullptr && *given != '\0') {
    seed = std::strtoull(given, nullptr, 10);
  } else {
    std::random_device device;
    seed = (static_cast<uint64_t>(device()) << 32) | device();
  }
  std::printf("seed %llu (%s=%llu replays it)\n", static_cast<unsigned long long>(seed), env_var,
              static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  return seed;
}

}  // namespace reprise
