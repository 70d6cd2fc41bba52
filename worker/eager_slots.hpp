// Worker::EagerSlots: the Worker's side of eager activity execution. A
// workflow task holds a free thread of the activity pool for each activity
// it asks the server to start for this worker, and the activity the server
// started runs on it with no poll.
//
// Thread safety: called from workflow task threads; the activity pool
// exists from before the first workflow task until after the last.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "reprise/worker.hpp"
#include "worker/task_pool.hpp"
#include "worker/workflow_task_runner.hpp"

namespace reprise {

class Worker::EagerSlots final : public worker::EagerActivities {
 public:
  explicit EagerSlots(Worker& worker) : worker_(worker) {}

  bool reserve(const std::string& type) override {
    return worker_.activity_pool_ != nullptr && worker_.activities_.count(type) > 0 &&
           worker_.activity_pool_->try_reserve();
  }
  void run(v1::PollActivityTaskResponse task) override {
    worker_.activity_pool_->post_reserved(
        worker_.activity_job(std::make_shared<const v1::PollActivityTaskResponse>(std::move(task))));
  }
  void release() override { worker_.activity_pool_->release_reserved(); }

 private:
  Worker& worker_;
};

// Worker::EagerStart: the Worker as the connection's target for eager
// workflow starts (StartOptions::eager_start): a free workflow thread is
// held for the first task and the task runs on it. Registered by start()
// and detached by stop() before the workflow pool goes; a task that comes
// after that is dropped, and times out and is redelivered.
class Worker::EagerStart final : public Connection::EagerStartTarget {
 public:
  explicit EagerStart(Worker& worker) : worker_(&worker), identity_(worker.options_.identity) {}

  std::string identity() const override { return identity_; }
  bool reserve() override {
    std::lock_guard lock(mu_);
    return worker_ != nullptr && worker_->workflow_pool_->try_reserve();
  }
  void run(v1::PollWorkflowTaskResponse task) override {
    std::lock_guard lock(mu_);
    if (worker_ == nullptr) return;
    worker_->workflow_pool_->post_reserved(
        worker_->workflow_job(std::make_shared<const v1::PollWorkflowTaskResponse>(std::move(task))));
  }
  void release() override {
    std::lock_guard lock(mu_);
    if (worker_ != nullptr) worker_->workflow_pool_->release_reserved();
  }
  void detach() {
    std::lock_guard lock(mu_);
    worker_ = nullptr;
  }

 private:
  std::mutex mu_;
  Worker* worker_;
  const std::string identity_;
};

}  // namespace reprise
