#include "engine/server/serving_status.hpp"

#include "engine/log.hpp"
#include "engine/thread_name.hpp"

namespace reprise::engine {

ServingStatus::ServingStatus(grpc::HealthCheckServiceInterface& health, std::function<std::string()> problem,
                             std::chrono::milliseconds interval)
    : health_(health), problem_(std::move(problem)), interval_(interval) {
  const bool serving = problem_().empty();
  publish(serving);
  // The thread starts from what was published, so a change between this
  // sample and its first one is published too.
  thread_ = std::thread([this, serving] { run(serving); });
  name_thread(thread_, "health");
}

ServingStatus::~ServingStatus() { stop_sampling(); }

void ServingStatus::stop_serving() {
  stop_sampling();  // so no later sample turns it back to SERVING
  publish(false);
}

void ServingStatus::stop_sampling() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ServingStatus::run(bool serving) {
  std::unique_lock lock(mu_);
  while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
    lock.unlock();
    const std::string problem = problem_();
    if (problem.empty() != serving) {
      serving = problem.empty();
      publish(serving);
      if (serving) {
        log::info("health: serving again");
      } else {
        log::warn("health: not serving", {{"problem", problem}});
      }
    }
    lock.lock();
  }
}

void ServingStatus::publish(bool serving) {
  for (const char* name : kServiceNames) health_.SetServingStatus(name, serving);
}

}  // namespace reprise::engine
