// Keeps the standard health service (grpc.health.v1.Health, what
// grpc_health_probe, Kubernetes gRPC probes and load balancers ask) in step
// with the engine: SERVING while the engine makes progress, NOT_SERVING while
// it reports a problem (its store cannot write: a full disk) and from the
// moment the server starts to shut down.
//
// Thread rule: one thread of its own samples the engine every `interval`;
// stop_serving() is called once, by the thread that owns this object. `health` and whatever
// `problem` reads must outlive this object; the destructor stops the thread.
#pragma once

#include <grpcpp/health_check_service_interface.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace reprise::engine {

class ServingStatus {
 public:
  // The names the status is kept under: "" (the whole server, what a probe
  // without --service asks) and the workflow service's full name.
  static constexpr const char* kServiceNames[] = {"", "reprise.v1.WorkflowService"};

  ServingStatus(grpc::HealthCheckServiceInterface& health, std::function<std::string()> problem,
                std::chrono::milliseconds interval);
  ~ServingStatus();
  ServingStatus(const ServingStatus&) = delete;
  ServingStatus& operator=(const ServingStatus&) = delete;

  // NOT_SERVING from now on, whatever the engine says (a shutdown has begun).
  void stop_serving();

 private:
  // `serving`: the status last published.
  void run(bool serving);
  void stop_sampling();
  void publish(bool serving);

  grpc::HealthCheckServiceInterface& health_;
  const std::function<std::string()> problem_;
  const std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace reprise::engine
