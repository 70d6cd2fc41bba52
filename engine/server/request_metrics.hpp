// Requests, errors and latency of every gRPC call reprise-server serves, by
// operation (the method's name) and, for errors, gRPC status: Temporal's
// service_requests, service_errors and service_latency. A server
// interceptor, so the handlers (grpc_service.cpp) know nothing of it.
//
// Thread safety: gRPC creates one interceptor per call on its threads; each
// counts with the registry's lock-free handles. Lifetime: the registry
// outlives the grpc::Server.
#pragma once

#include <grpcpp/support/server_interceptor.h>

#include <memory>

#include "reprise/metrics.hpp"

namespace reprise::engine {

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> request_metrics_interceptor(
    metrics::Registry& registry);

}  // namespace reprise::engine
