// reprise-thread: threads, async tasks and processes started by workflow code.
#include <pthread.h>
#include <unistd.h>

#include <future>
#include <thread>

#include "reprise/workflow.hpp"

void* work(void*) { return nullptr; }

reprise::Workflow<void> starts(reprise::WorkflowContext&) {
  std::thread worker([] {});  // expect: reprise-thread
  worker.detach();
  auto later = std::async(std::launch::deferred, [] { return 1; });  // expect: reprise-thread
  pthread_t id;
  pthread_create(&id, nullptr, work, nullptr);  // expect: reprise-thread
  if (fork() == 0) _exit(0);                    // expect: reprise-thread
  co_return;
}

// Negative: concurrency inside the workflow, through the context.
reprise::Task<int> branch(reprise::WorkflowContext& ctx) {
  co_await ctx.sleep(std::chrono::seconds(1));
  co_return 1;
}
reprise::Workflow<int> spawns(reprise::WorkflowContext& ctx) {
  auto b = ctx.spawn(branch(ctx));
  co_return co_await b;
}
