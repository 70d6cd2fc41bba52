// Every randomness pattern of lint/rules.cpp, one call per line (reprise-random).
#include <sys/random.h>
#include <unistd.h>

#include <cstdlib>
#include <random>

#include "reprise/workflow.hpp"

reprise::Workflow<long> every_random(reprise::WorkflowContext&) {
  long sum = rand();  // expect: reprise-random
  srand(7);           // expect: reprise-random
  unsigned seed = 1;
  sum += rand_r(&seed);                      // expect: reprise-random
  sum += random();                           // expect: reprise-random
  srandom(7);                                // expect: reprise-random
  sum += lrand48();                          // expect: reprise-random
  sum += static_cast<long>(drand48() * 10);  // expect: reprise-random
  unsigned short xsubi[3] = {1, 2, 3};
  sum += nrand48(xsubi);  // expect: reprise-random
  srand48(7);             // expect: reprise-random
  unsigned char buffer[8];
  getrandom(buffer, sizeof buffer, 0);         // expect: reprise-random
  getentropy(buffer, sizeof buffer);           // expect: reprise-random
  sum += arc4random();                         // expect: reprise-random
  sum += arc4random_uniform(6);                // expect: reprise-random
  arc4random_buf(buffer, sizeof buffer);       // expect: reprise-random
  std::random_device device;                   // expect: reprise-random
  sum += device();                             // expect: reprise-random
  sum += static_cast<long>(device.entropy());  // expect: reprise-random
  co_return sum + buffer[0];
}

// Negative: a generator and distribution seeded from ctx.random().
reprise::Workflow<long> seeded_generator(reprise::WorkflowContext& ctx) {
  std::minstd_rand generator(ctx.random());
  std::uniform_int_distribution<long> dice(1, 6);
  co_return dice(generator);
}
