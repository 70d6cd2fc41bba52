// ExecutionSerializer: at most one transition of an execution in flight.
//
// Operations on the same key run one after another, each starting when the
// previous one calls its `done` (after its commit was acknowledged), so two
// transitions of one execution never race for its version. Operations on
// different keys run concurrently, which is what lets the store batch them
// into one commit. A caller may bound how many operations wait behind the
// one running (requests from outside do; the engine's own work, bounded
// elsewhere, does not).
//
// Thread safety: run() and done() from any thread. Operations are started on
// the executor.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>

#include "engine/store/records.hpp"
#include "engine/task_runner.hpp"

namespace reprise::engine {

class ExecutionSerializer {
 public:
  using Done = std::function<void()>;
  using Operation = std::function<void(Done)>;

  explicit ExecutionSerializer(TaskRunner& executor) : executor_(executor) {}

  static constexpr size_t kUnbounded = SIZE_MAX;

  // Runs `op` once the key's earlier operations are done; false (and `op`
  // dropped unrun) when `max_waiting` operations of the key wait already.
  bool run(const ExecutionKey& key, Operation op, size_t max_waiting = kUnbounded) {
    {
      std::lock_guard lock(mu_);
      auto [it, idle] = queues_.try_emplace(key);
      if (!idle) {
        if (it->second.size() >= max_waiting) return false;
        it->second.push_back(std::move(op));
        return true;
      }
    }
    start(key, std::move(op));
    return true;
  }

 private:
  void start(const ExecutionKey& key, Operation op) {
    executor_.post([this, key, op = std::move(op)] { op([this, key] { next(key); }); });
  }

  void next(const ExecutionKey& key) {
    Operation op;
    {
      std::lock_guard lock(mu_);
      auto it = queues_.find(key);
      if (it->second.empty()) {
        queues_.erase(it);
        return;
      }
      op = std::move(it->second.front());
      it->second.pop_front();
    }
    start(key, std::move(op));
  }

  TaskRunner& executor_;
  std::mutex mu_;
  // Present while an operation of the key runs; holds the ones waiting.
  std::map<ExecutionKey, std::deque<Operation>> queues_;
};

}  // namespace reprise::engine
