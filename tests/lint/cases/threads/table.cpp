// Every thread and process pattern of lint/rules.cpp, one call per line (reprise-thread).
#include <pthread.h>
#include <spawn.h>
#include <unistd.h>

#include <future>
#include <thread>

#include "reprise/workflow.hpp"

void* run(void*) { return nullptr; }

reprise::Workflow<int> every_thread(reprise::WorkflowContext&, char** argv) {
  std::thread t([] {});  // expect: reprise-thread
  t.detach();
  std::jthread jt([] {});                                         // expect: reprise-thread
  auto later = std::async(std::launch::async, [] { return 1; });  // expect: reprise-thread
  pthread_t id;
  pthread_create(&id, nullptr, run, nullptr);  // expect: reprise-thread
  int pid = fork();                            // expect: reprise-thread
  pid += vfork();                              // expect: reprise-thread
  pid_t child;
  posix_spawn(&child, "/bin/true", nullptr, nullptr, argv, nullptr);  // expect: reprise-thread
  posix_spawnp(&child, "true", nullptr, nullptr, argv, nullptr);      // expect: reprise-thread
  co_return pid + child;
}
