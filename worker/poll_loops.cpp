// The Worker's poll loops: each long-polls its queue while a thread of its
// pool is free and hands what it gets to the pool; a failed poll (the server
// is away) is logged once per run of failures and retried after a pause.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <utility>

#include "reprise/worker.hpp"
#include "worker/task_pool.hpp"
#include "worker/workflow_task_runner.hpp"

namespace reprise {

namespace {

// A failed RPC while polling: the server is away. Wait a little, poll again.
void back_off() { std::this_thread::sleep_for(std::chrono::milliseconds(200)); }

// Counts a poller thread while its loop runs.
struct PollingThread {
  std::atomic<int>& count;
  explicit PollingThread(std::atomic<int>& c) : count(c) { ++count; }
  ~PollingThread() { --count; }
};

// A task thread in use while it lives (reprise_worker_task_slots_used).
struct SlotUsed {
  const metrics::Gauge& slots;
  explicit SlotUsed(const metrics::Gauge& g) : slots(g) { slots.add(1); }
  ~SlotUsed() { slots.add(-1); }
};

void log_poll_failure(const char* kind, const std::string& queue, const RpcError& e) {
  std::fprintf(stderr, "level=warn msg=\"%s poll failed, retrying\" task_queue=%s error=\"%s\"\n", kind, queue.c_str(),
               e.what());
}

}  // namespace

void Worker::workflow_poll_loop(const std::string& queue) {
  PollingThread counted(polling_threads_);
  bool poll_failing = false;
  while (!stopping_ && workflow_pool_->wait_for_free_thread()) {
    v1::PollWorkflowTaskRequest poll;
    poll.mutable_task_queue()->set_name(queue);
    // A cluster keeps a sticky queue on the node its worker polls.
    if (queue == sticky_queue_) poll.mutable_task_queue()->set_kind(v1::TASK_QUEUE_KIND_STICKY);
    poll.set_identity(options_.identity);
    poll.set_maximum_page_size(options_.history_page_events);
    auto task = std::make_shared<v1::PollWorkflowTaskResponse>();
    try {
      const auto asked = std::chrono::steady_clock::now();
      *task = connection_->poll_workflow_task(poll);
      metrics_->workflow_poll_latency.observe(std::chrono::steady_clock::now() - asked);
      poll_failing = false;
    } catch (const RpcError& e) {
      // Once per run of failures: the server is away, or sent a task that
      // does not parse (no token to fail it with: the server must refuse such input).
      if (!std::exchange(poll_failing, true)) log_poll_failure("workflow", queue, e);
      back_off();
      continue;
    }
    if (task->task_token().empty()) continue;
    workflow_pool_->post(workflow_job(std::move(task)));
  }
}

std::function<void()> Worker::workflow_job(std::shared_ptr<const v1::PollWorkflowTaskResponse> task,
                                           std::function<void()> if_unanswered) {
  return [this, task = std::move(task), if_unanswered = std::move(if_unanswered)] {
    SlotUsed slot(metrics_->workflow_slots_used);
    try {
      workflow_tasks_->run(*task);
    } catch (const std::exception& e) {
      // The answer did not arrive; the task times out and comes back.
      std::fprintf(stderr, "reprise worker: %s\n", e.what());
      if (if_unanswered) if_unanswered();
    }
  };
}

void Worker::activity_poll_loop() {
  PollingThread counted(polling_threads_);
  bool poll_failing = false;
  while (!stopping_ && activity_pool_->wait_for_free_thread()) {
    v1::PollActivityTaskRequest poll;
    poll.mutable_task_queue()->set_name(options_.task_queue);
    poll.set_identity(options_.identity);
    auto task = std::make_shared<v1::PollActivityTaskResponse>();
    try {
      const auto asked = std::chrono::steady_clock::now();
      *task = connection_->poll_activity_task(poll);
      metrics_->activity_poll_latency.observe(std::chrono::steady_clock::now() - asked);
      poll_failing = false;
    } catch (const RpcError& e) {
      if (!std::exchange(poll_failing, true)) log_poll_failure("activity", options_.task_queue, e);
      back_off();
      continue;
    }
    if (task->task_token().empty()) continue;
    activity_pool_->post(activity_job(std::move(task)));
  }
}

}  // namespace reprise
