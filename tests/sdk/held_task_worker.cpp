// A worker process for worker_kill_test.cpp: serves the held-task workflow on
// the server at --address, with the activity holding its task forever (it
// prints "holding ORDER attempt N" first). Prints "ready" once started; the
// test kills it with SIGKILL.
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "held_task.hpp"
#include "reprise/client.hpp"
#include "reprise/worker.hpp"

int main(int argc, char** argv) {
  std::string address, identity = "held-task-worker";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--address") == 0) address = argv[i + 1];
    if (std::strcmp(argv[i], "--identity") == 0) identity = argv[i + 1];
  }
  if (address.empty()) {
    std::fprintf(stderr, "usage: held_task_worker --address HOST:PORT [--identity NAME]\n");
    return 2;
  }
  reprise::held_task::hold_here = true;
  reprise::Worker worker(reprise::Connection::remote(address),
                         {.task_queue = reprise::held_task::kQueue, .identity = identity});
  worker.register_workflow(reprise::held_task::held_wf);
  worker.register_activity(reprise::held_task::step_activity);
  worker.start();
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}
