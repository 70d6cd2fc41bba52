// Every clock pattern of lint/rules.cpp, one call per line (reprise-clock).
#include <sys/time.h>
#include <sys/timeb.h>

#include <chrono>
#include <ctime>
#include <filesystem>

#include "reprise/workflow.hpp"

// std::chrono::file_clock is libstdc++'s std::filesystem::__file_clock.
reprise::Workflow<long> every_clock(reprise::WorkflowContext&) {
  long sum = std::chrono::system_clock::now().time_since_epoch().count();       // expect: reprise-clock
  sum += std::chrono::steady_clock::now().time_since_epoch().count();           // expect: reprise-clock
  sum += std::chrono::high_resolution_clock::now().time_since_epoch().count();  // expect: reprise-clock
  std::time_t t = time(nullptr);                                                // expect: reprise-clock
  sum += static_cast<long>(clock());                                            // expect: reprise-clock
  timeval tv{};
  gettimeofday(&tv, nullptr);  // expect: reprise-clock
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);  // expect: reprise-clock
  timespec_get(&ts, TIME_UTC);         // expect: reprise-clock
  timeb tb{};
  ftime(&tb);  // expect: reprise-clock
  std::tm parts{};
  std::tm* local = localtime(&t);                                                   // expect: reprise-clock
  localtime_r(&t, &parts);                                                          // expect: reprise-clock
  std::tm* utc = gmtime(&t);                                                        // expect: reprise-clock
  gmtime_r(&t, &parts);                                                             // expect: reprise-clock
  sum += mktime(&parts);                                                            // expect: reprise-clock
  sum += std::chrono::file_clock::now().time_since_epoch().count();                 // expect: reprise-clock
  sum += std::filesystem::file_time_type::clock::now().time_since_epoch().count();  // expect: reprise-clock
  co_return sum + tv.tv_sec + ts.tv_sec + tb.time + local->tm_hour + utc->tm_hour;
}

// Negative: formatting a given time and durations do not read the clock.
reprise::Workflow<long> formats_given_time(reprise::WorkflowContext& ctx) {
  auto since_epoch = ctx.now().time_since_epoch();
  auto file_time = std::chrono::file_clock::from_sys(ctx.now());
  co_return std::chrono::duration_cast<std::chrono::seconds>(since_epoch).count() + std::difftime(10, 5) +
      file_time.time_since_epoch().count();
}
