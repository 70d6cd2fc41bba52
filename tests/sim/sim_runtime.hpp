// The engine's runtime in the simulator (engine/engine_runtime.hpp): its
// executor, read pool and deadlines all post to the one Scheduler, and
// deadlines are measured on its virtual clock (the engine's timer loop
// sleeps on them, as its thread would). One SimRuntime per engine
// incarnation: once the "process" crashes (kill()), nothing it queued runs.
//
// Thread safety: none; the simulator's thread only.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "engine/engine_runtime.hpp"
#include "scheduler.hpp"

namespace reprise::sim {

class SimRunner final : public engine::TaskRunner {
 public:
  SimRunner(Scheduler& scheduler, std::string label, std::shared_ptr<bool> alive)
      : scheduler_(scheduler), label_(std::move(label)), alive_(std::move(alive)) {}
  void post(std::function<void()> job) override {
    scheduler_.post(label_, [alive = alive_, job = std::move(job)] {
      if (*alive) job();
    });
  }

 private:
  Scheduler& scheduler_;
  std::string label_;
  std::shared_ptr<bool> alive_;
};

class SimDeadlines final : public engine::Deadlines {
 public:
  SimDeadlines(Scheduler& scheduler, std::shared_ptr<bool> alive) : scheduler_(scheduler), alive_(std::move(alive)) {}
  SteadyTime now() const override { return SteadyTime(std::chrono::hours(1) + scheduler_.now()); }
  Id schedule(SteadyTime when, std::function<void()> callback) override {
    const Id id = next_id_++;
    if (stopped_) return id;
    live_.emplace(id, std::move(callback));
    scheduler_.after(when - now(), "deadline", [this, alive = alive_, id] {
      if (!*alive) return;
      auto it = live_.find(id);
      if (it == live_.end()) return;
      std::function<void()> callback = std::move(it->second);
      live_.erase(it);
      callback();
    });
    return id;
  }
  bool cancel(Id id) override { return live_.erase(id) > 0; }
  size_t size() override { return live_.size(); }
  void stop() override {
    stopped_ = true;
    live_.clear();
  }

 private:
  Scheduler& scheduler_;
  std::shared_ptr<bool> alive_;
  std::map<Id, std::function<void()>> live_;
  Id next_id_ = 1;
  bool stopped_ = false;
};

// One engine incarnation's runtime; kill() is the process crash.
struct SimRuntime {
  explicit SimRuntime(Scheduler& scheduler)
      : alive(std::make_shared<bool>(true)),
        executor(scheduler, "engine", alive),
        read_pool(scheduler, "engine-read", alive),
        upload_pool(scheduler, "engine-upload", alive),
        deadlines(scheduler, alive),
        runtime{executor, read_pool, upload_pool, deadlines} {}
  void kill() { *alive = false; }

  std::shared_ptr<bool> alive;
  SimRunner executor;
  SimRunner read_pool;
  SimRunner upload_pool;
  SimDeadlines deadlines;
  engine::EngineRuntime runtime;
};

}  // namespace reprise::sim
