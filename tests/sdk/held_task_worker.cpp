// A worker process for worker_kill_test.cpp: serves the held-task workflow on
// the server at --address, with the activity holding its task forever (it
// prints "holding ORDER attempt N" first). Prints "ready" once started; the
// test kills it with SIGKILL. With --hold workflow-task it serves
// held_after_step instead, whose task after the activity holds forever; it
// prints "eager workflow task" when an activity's answer brings one.
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "forwarding_connection.hpp"
#include "held_task.hpp"
#include "reprise/client.hpp"
#include "reprise/worker.hpp"

// Says when an activity's answer brings a workflow task (eager), before the
// worker runs it.
class SaysEager : public reprise::ForwardingConnection {
 public:
  using ForwardingConnection::ForwardingConnection;
  reprise::v1::CompleteActivityResponse complete_activity_answered(
      const reprise::v1::CompleteActivityRequest& r) override {
    reprise::v1::CompleteActivityResponse out = inner_->complete_activity_answered(r);
    if (!out.workflow_task().task_token().empty()) {
      std::printf("eager workflow task\n");
      std::fflush(stdout);
    }
    return out;
  }
};

int main(int argc, char** argv) {
  std::string address, identity = "held-task-worker", hold = "activity";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--address") == 0) address = argv[i + 1];
    if (std::strcmp(argv[i], "--identity") == 0) identity = argv[i + 1];
    if (std::strcmp(argv[i], "--hold") == 0) hold = argv[i + 1];
  }
  if (address.empty()) {
    std::fprintf(stderr, "usage: held_task_worker --address HOST:PORT [--identity NAME]\n");
    return 2;
  }
  if (hold == "workflow-task") {
    reprise::held_task::hold_workflow_task_here = true;
    reprise::Worker worker(std::make_shared<SaysEager>(reprise::Connection::remote(address)),
                           {.task_queue = reprise::held_task::kQueue, .identity = identity});
    worker.register_workflow(reprise::held_task::held_after_step_wf);
    worker.register_activity(reprise::held_task::quick_activity);
    worker.start();
    std::printf("ready\n");
    std::fflush(stdout);
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
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
