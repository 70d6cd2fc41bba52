// reprise-logging: logs that repeat on every replay.
#include <syslog.h>

#include <cstdio>
#include <iostream>

#include "reprise/workflow.hpp"

reprise::Workflow<void> chatty(reprise::WorkflowContext& ctx) {
  std::cout << "starting\n";
  printf("step %d\n", 1);
  std::fprintf(stderr, "warning\n");
  syslog(LOG_INFO, "done");
  co_await ctx.sleep(std::chrono::seconds(1));
}

// Negative: the workflow logger is quiet while replaying.
reprise::Workflow<void> quiet(reprise::WorkflowContext& ctx) {
  ctx.logger().info("starting");
  co_await ctx.sleep(std::chrono::seconds(1));
}
