// reprise-server: the workflow service on one SQLite file.
//
//   reprise-server [--db PATH] [--listen HOST:PORT] [FLAGS]   (--help lists every flag: server_flags.cpp)
//
// Back-pressure: requests that change a workflow are bounded server-wide by
// --max-pending-requests (default 10000); queries waiting for a worker's
// answer by --max-pending-queries (default 1000), apart, so waiting queries
// never refuse real work. A query waits at most --max-query-wait-ms (default
// 60000; a longer client timeout is cut to it). Beyond a bound a request gets
// RESOURCE_EXHAUSTED, retryable. docs/engine.md, "Limits and refusals".
//
// The database: a missing file is created; an existing file is opened only if
// it is a sound Reprise database. An empty file (0 bytes) is refused unless
// --init-empty-file; a file that is not SQLite, someone else's database or a
// newer schema is always refused; and PRAGMA quick_check reads the whole file
// before the server serves (its time is logged), refusing a damaged one,
// unless --skip-quick-check (for files too big to read at every start).
// `reprise admin check --db PATH` runs the full integrity_check, also while
// the server runs. docs/storage.md, "Bad files and full disks".
//
// Retention: closed runs are deleted (history, visibility, tasks, timers,
// blob references; the id's current run) once closed for --retention
// (default 7d; 0 keeps them), by a sweeper that looks every
// --retention-sweep-interval (default 1m). docs/engine.md, "Retention".
//
// Beside the workflow service it serves the standard health service
// (grpc.health.v1.Health: NOT_SERVING while the store cannot write, and once
// shutdown begins) and server reflection (grpcurl). Logs go to stderr, one
// logfmt (or, with --log-format json, JSON) line per event (engine/log.hpp).
// Prints "reprise-server listening on HOST:PORT" once it serves (with the
// real port when asked for port 0), ending "metrics on HOST:PORT" with
// --metrics-listen (Prometheus' /metrics, docs/operations.md), and "ui on
// HOST:PORT" with --ui-listen (the web UI, web_ui.hpp; loopback only unless
// --insecure). SIGTERM or SIGINT: stop accepting, let
// operations in flight finish, close the database cleanly.
#include <absl/synchronization/mutex.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "engine/server/cluster_service.hpp"
#include "engine/server/grpc_service.hpp"
#include "engine/server/http_listener.hpp"
#include "engine/server/keepalive.hpp"
#include "engine/server/metrics_endpoint.hpp"
#include "engine/server/open_database.hpp"
#include "engine/server/request_metrics.hpp"
#include "engine/server/server_flags.hpp"
#include "engine/server/server_metrics.hpp"
#include "engine/server/server_tls.hpp"
#include "engine/server/serving_status.hpp"
#include "engine/server/web_ui.hpp"
#include "engine/store/database_url.hpp"
#include "tools/command_line/command_line.hpp"

using namespace reprise;
using namespace reprise::engine;

int main(int argc, char** argv) {
  // Signals are taken synchronously by this thread, never by a handler. They
  // are blocked before anything starts a thread (gRPC's first use does), so
  // every thread inherits the block: one that did not would take SIGTERM's
  // default action and kill the server mid-request.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // Debian's Abseil is built without NDEBUG, so every absl::Mutex lock in
  // gRPC also updated a process-wide lock-order graph under one global
  // spinlock (absl's deadlock detection: GraphCycles in the profile). That
  // is a debugging aid; off before gRPC's first lock.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  ServerFlags flags;
  CLI::App app("", "reprise-server");
  command_line::set_up(app);
  add_server_flags(app, flags);
  if (std::optional<int> exit_code = command_line::parse(app, argc, argv)) return *exit_code;
  // Before the database is opened: a bad certificate or an unsafe address
  // changes nothing.
  Result<std::shared_ptr<grpc::ServerCredentials>> credentials = server_credentials(flags.tls, flags.listen);
  if (!credentials) {
    std::fprintf(stderr, "reprise-server: %s\n", credentials.status().message().c_str());
    return 1;
  }
  Result<ClusterPeers::Transport> peers = peer_transport(flags.tls);
  if (!peers) {
    std::fprintf(stderr, "reprise-server: %s\n", peers.status().message().c_str());
    return 1;
  }
  peers->keepalive = flags.peer_keepalive;
  // The web UI asks for no login: beyond loopback only knowingly.
  if (!flags.ui_listen.empty() && !flags.tls.insecure && !is_loopback_host(listen_host(flags.ui_listen))) {
    std::fprintf(stderr,
                 "reprise-server: --ui-listen %s is not a loopback address: the web UI asks for no login, so anyone "
                 "who reaches it can signal and terminate workflows; serve it on 127.0.0.1 (an SSH tunnel or an "
                 "authenticating proxy in front), or give --insecure to serve it there knowingly\n",
                 flags.ui_listen.c_str());
    return 1;
  }
  if (flags.tls.insecure && !is_loopback_host(listen_host(flags.listen)) && flags.tls.cert_file.empty()) {
    log::warn(
        "serving plaintext beyond loopback (--insecure): anyone who reaches the port can run and read every "
        "workflow",
        {{"address", flags.listen}});
  }
  // A full disk is logged once, then every 10 s with the attempts between,
  // and once more when writes go through again (write_stall.hpp), on
  // either store.
  flags.store.on_write_stall = [db = redact_password(flags.db)](const WriteStall& stall) {
    if (stall.stalled) {
      log::error("writes wait for room on the disk; retrying with backoff",
                 {{"db", db},
                  {"error", stall.error},
                  {"for_s", std::to_string(stall.duration.count())},
                  {"attempts", std::to_string(stall.attempts)},
                  {"attempts_since_last_line", std::to_string(stall.unreported)}});
    } else {
      log::info("writes go through again", {{"db", db},
                                            {"waited_s", std::to_string(stall.duration.count())},
                                            {"attempts", std::to_string(stall.attempts)}});
    }
  };

  Result<std::unique_ptr<Store>> store = open_database(flags);
  if (!store) {
    std::fprintf(stderr, "reprise-server: %s\n", store.status().to_string().c_str());
    return 1;
  }
  // API keys (api_key_auth.hpp): read now and every second after.
  Result<std::unique_ptr<ApiKeyAuth>> auth = ApiKeyAuth::start(**store);
  if (!auth) {
    std::fprintf(stderr, "reprise-server: %s\n", auth.status().to_string().c_str());
    return 1;
  }
  if (Status known = check_callers_known(flags.tls, flags.listen, (*auth)->keys_defined()); !known) {
    std::fprintf(stderr, "reprise-server: %s\n", known.message().c_str());
    return 1;
  }
  if (!(*auth)->keys_defined() && flags.tls.client_ca_file.empty() && !is_loopback_host(listen_host(flags.listen))) {
    log::warn("serving beyond loopback with no API keys (--insecure): any caller can run and read every workflow",
              {{"address", flags.listen}});
  }
  // --metrics-listen (and the web UI's summary of them): the engine and
  // every gRPC call count into this.
  std::unique_ptr<metrics::Registry> registry;
  if (!flags.metrics_listen.empty() || !flags.ui_listen.empty()) {
    flags.engine.metrics = (registry = std::make_unique<metrics::Registry>()).get();
  }
  // Transfer tasks whose target another node serves are applied there, and
  // tasks go to their queues' owners (cluster_service.hpp).
  auto internal_peers = std::make_shared<InternalPeers>(*peers);
  flags.engine.transfer_peers = internal_peers;
  flags.engine.task_queue_peers = internal_peers;
  Result<std::unique_ptr<Engine>> engine = Engine::start(**store, flags.engine);
  if (!engine) {
    std::fprintf(stderr, "reprise-server: %s\n", engine.status().to_string().c_str());
    return 1;
  }
  // Torn down before the engine and the store: its payload streams' last
  // work (an upload's discard) writes to the store after the server is gone.
  auto service = std::make_unique<GrpcService>(**engine, (*store)->blobs(), flags.engine.claim_check.blob_limit, **auth,
                                               std::move(*peers));
  // The standard health service (grpc.health.v1.Health) and server
  // reflection (grpc.reflection.v1alpha, what grpcurl uses) beside ours.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(flags.listen, *credentials, &port);
  builder.RegisterService(service.get());
  auto internal_service = std::make_unique<ClusterInternalService>(**engine);
  builder.RegisterService(internal_service.get());
  builder.SetMaxReceiveMessageSize(64 << 20);
  builder.SetMaxSendMessageSize(64 << 20);
  accept_keepalive_pings(builder);  // clients and other nodes ping to find a node that stopped answering
  if (registry) {
    add_server_metrics(*registry, **engine, (*store)->blobs(), flags.db);
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
    interceptors.push_back(request_metrics_interceptor(*registry));
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::fprintf(stderr, "reprise-server: cannot listen on %s\n", flags.listen.c_str());
    return 1;
  }
  service->set_own_address(announce_address(**store, flags, port));
  ServingStatus serving_status(
      *server->GetHealthCheckService(), [&] { return (*engine)->server_problem(); }, std::chrono::seconds(1));
  // The HTTP listeners: /metrics and the web UI, on one address or two.
  std::vector<std::unique_ptr<HttpListener>> http_listeners;
  auto listen_http = [&](const std::string& flag, const std::string& address,
                         std::vector<HttpRoutes> parts) -> std::optional<std::string> {
    Result<std::unique_ptr<HttpListener>> started = HttpListener::start(flag, address, parts);
    if (!started) {
      std::fprintf(stderr, "reprise-server: %s\n", started.status().to_string().c_str());
      return std::nullopt;
    }
    http_listeners.push_back(std::move(*started));
    return http_listeners.back()->address();
  };
  std::optional<HttpRoutes> ui_routes;
  if (!flags.ui_listen.empty()) {
    ui_routes = web_ui_routes(
        **engine, (*store)->blobs(),
        {.loopback_hosts_only = is_loopback_host(listen_host(flags.ui_listen)), .registry = registry.get()});
  }
  std::string listening_note;
  if (!flags.metrics_listen.empty() && flags.metrics_listen == flags.ui_listen) {
    const std::optional<std::string> both =
        listen_http("--metrics-listen and --ui-listen", flags.metrics_listen, {metrics_routes(*registry), *ui_routes});
    if (!both) return 1;
    listening_note = " metrics on " + *both + " ui on " + *both;
  } else {
    if (!flags.metrics_listen.empty()) {
      const std::optional<std::string> at =
          listen_http("--metrics-listen", flags.metrics_listen, {metrics_routes(*registry)});
      if (!at) return 1;
      listening_note += " metrics on " + *at;
    }
    if (ui_routes) {
      const std::optional<std::string> at = listen_http("--ui-listen", flags.ui_listen, {*ui_routes});
      if (!at) return 1;
      listening_note += " ui on " + *at;
    }
  }
  const std::string host = flags.listen.substr(0, flags.listen.rfind(':'));
  const std::string shown_db = redact_password(flags.db);  // a URL's password stays out of output and logs
  std::printf("reprise-server listening on %s:%d (db %s)%s\n", host.c_str(), port, shown_db.c_str(),
              listening_note.c_str());
  log::info("server listening", {{"address", host + ":" + std::to_string(port)}, {"db", shown_db}});
  std::fflush(stdout);

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::printf("reprise-server: %s, shutting down\n", signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
  std::fflush(stdout);
  serving_status.stop_serving();  // load balancers stop sending new work
  http_listeners.clear();         // scrapes and the web UI read the engine
  (*engine)->shutdown();          // parked polls answer, operations in flight finish
  // Every call has its answer by now; the deadline only bounds how long gRPC
  // waits on idle client connections (it waits the whole deadline when any
  // is open), and 200 ms leaves time to flush the last answers.
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  server.reset();
  internal_service.reset();
  service.reset();  // waits for the payload streams' last store work
  auth->reset();    // its thread reads the store
  engine->reset();
  store->reset();  // commits what is queued, then closes the database
  std::printf("reprise-server: stopped cleanly\n");
  log::info("server stopped");
  return 0;
}
