#include "engine/server/request_metrics.hpp"

#include <array>
#include <chrono>
#include <string_view>

namespace reprise::engine {

namespace {

using grpc::experimental::InterceptionHookPoints;

// gRPC's status codes by number, as grpc::StatusCode names them.
constexpr std::array<std::string_view, 17> kCodeNames = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

struct Families {
  metrics::CounterFamily requests;
  metrics::CounterFamily errors;
  metrics::HistogramFamily latency;
};

class RequestInterceptor final : public grpc::experimental::Interceptor {
 public:
  RequestInterceptor(const Families& families, std::string_view operation)
      : families_(families), operation_(operation), started_(std::chrono::steady_clock::now()) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      families_.requests.with({operation_}).inc();
      families_.latency.with({operation_}).observe(std::chrono::steady_clock::now() - started_);
      if (!status.ok()) {
        const auto code = static_cast<size_t>(status.error_code());
        families_.errors.with({operation_, code < kCodeNames.size() ? kCodeNames[code] : "UNKNOWN"}).inc();
      }
    }
    methods->Proceed();
  }

 private:
  const Families& families_;
  std::string_view operation_;  // within the method name gRPC keeps for the server's life
  std::chrono::steady_clock::time_point started_;
};

class RequestMetricsFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RequestMetricsFactory(metrics::Registry& r)
      : families_{r.counters("service_requests_total", "gRPC calls answered, by operation.", {"operation"}),
                  r.counters("service_errors_total", "gRPC calls answered with an error, by operation and status.",
                             {"operation", "status_code"}),
                  r.histograms("service_latency_seconds",
                               "From a gRPC call's arrival to its answer, by operation (long-polls included).",
                               {"operation"}, metrics::latency_buckets())} {}

  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    // "/reprise.v1.WorkflowService/StartWorkflow" -> "StartWorkflow".
    std::string_view method = info->method() != nullptr ? info->method() : "";
    if (const size_t slash = method.rfind('/'); slash != std::string_view::npos) method.remove_prefix(slash + 1);
    return new RequestInterceptor(families_, method);
  }

 private:
  Families families_;
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> request_metrics_interceptor(
    metrics::Registry& registry) {
  return std::make_unique<RequestMetricsFactory>(registry);
}

}  // namespace reprise::engine
