// reprise-random: randomness outside ctx.random().
#include <sys/random.h>

#include <cstdlib>
#include <random>

#include "reprise/workflow.hpp"

reprise::Workflow<int> draws(reprise::WorkflowContext& ctx) {
  int a = std::rand();               // expect: reprise-random
  std::random_device device;         // expect: reprise-random
  std::mt19937 generator(device());  // expect: reprise-random
  unsigned char buffer[4];
  getrandom(buffer, sizeof buffer, 0);  // expect: reprise-random
  co_await ctx.sleep(std::chrono::seconds(1));
  co_return a + static_cast<int>(generator()) + buffer[0];
}

// Negative: a generator seeded from ctx.random() replays the same numbers.
reprise::Workflow<int> seeded(reprise::WorkflowContext& ctx) {
  std::mt19937_64 generator(ctx.random());
  std::uniform_int_distribution<int> dice(1, 6);
  co_return dice(generator);
}
