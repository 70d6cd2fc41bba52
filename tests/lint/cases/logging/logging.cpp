// reprise-logging: logs that repeat on every replay.
#include <syslog.h>

#include <cstdio>
#include <iostream>

#include "reprise/workflow.hpp"

reprise::Workflow<void> chatty(reprise::WorkflowContext& ctx) {
  std::cout << "starting\n";          // expect: reprise-logging
  printf("step %d\n", 1);             // expect: reprise-logging
  std::fprintf(stderr, "warning\n");  // expect: reprise-logging reprise-logging
  syslog(LOG_INFO, "done");           // expect: reprise-logging
  co_await ctx.sleep(std::chrono::seconds(1));
}

// Negative: the workflow logger is quiet while replaying.
reprise::Workflow<void> quiet(reprise::WorkflowContext& ctx) {
  ctx.logger().info("starting");
  co_await ctx.sleep(std::chrono::seconds(1));
}
