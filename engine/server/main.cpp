// reprise-server: the workflow service on one SQLite file.
//
//   reprise-server [--db PATH] [--listen HOST:PORT] [--poll-timeout-ms N]
//                  [--history-warn-events N] [--history-fail-events N]
//                  [--history-warn-bytes N] [--history-fail-bytes N]
//                  [--max-pending-activities N] [--max-pending-children N]
//                  [--max-id-length N] [--claim-check-threshold-bytes N]
//                  [--blob-limit-bytes N] [--durability full|normal]
//                  [--log-level debug|info|warn|error|off] [--log-format logfmt|json]
//                  [--init-empty-file] [--skip-quick-check]
//                  [--retention DURATION] [--retention-sweep-interval DURATION]
//                  [--retention-batch N]
//                  [--max-pending-requests N] [--max-waiting-per-execution N]
//                  [--max-pending-queries N] [--max-query-wait-ms N]
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
// real port when asked for port 0). SIGTERM or SIGINT: stop accepting, let
// operations in flight finish, close the database cleanly.
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "engine/server/grpc_service.hpp"
#include "engine/server/serving_status.hpp"
#include "engine/store/sqlite_store.hpp"

using namespace reprise;
using namespace reprise::engine;

namespace {

struct Flags {
  std::string db = "./reprise.db";
  std::string listen = "127.0.0.1:7233";
  EngineOptions engine;
  StoreOptions store;
};

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "reprise-server: %s\n(see the comment at the top of engine/server/main.cpp or docs)\n",
               message.c_str());
  std::exit(2);
}

int64_t parse_int(const std::string& flag, const char* text) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < 0)
    usage_error(flag + " wants a non-negative integer, got '" + text + "'");
  return v;
}

// A duration: a non-negative integer with a unit (ms, s, m, h, d), or
// seconds without one.
std::chrono::milliseconds parse_duration(const std::string& flag, const char* text) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  const std::string unit = end != nullptr ? end : "";
  int64_t ms_per_unit = 0;
  if (unit.empty() || unit == "s") ms_per_unit = 1000;
  if (unit == "ms") ms_per_unit = 1;
  if (unit == "m") ms_per_unit = 60'000;
  if (unit == "h") ms_per_unit = 3'600'000;
  if (unit == "d") ms_per_unit = 86'400'000;
  if (errno != 0 || end == text || v < 0 || ms_per_unit == 0 || v > INT64_MAX / ms_per_unit / 1000) {
    usage_error(flag + " wants a duration such as 7d, 12h, 30m, 45s or 500ms, got '" + text + "'");
  }
  return std::chrono::milliseconds(v * ms_per_unit);
}

Flags parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::printf(
          "usage: reprise-server [FLAGS]\n"
          "  --db PATH                  the SQLite file (default ./reprise.db); a missing file is created\n"
          "  --listen HOST:PORT         (default 127.0.0.1:7233; port 0 picks one)\n"
          "  --durability full|normal   fsync at every commit (full, default) or at checkpoints\n"
          "  --init-empty-file          start a new database in an existing empty (0-byte) file; without it\n"
          "                             such a file is refused, as it is more often a lost database than a new one\n"
          "  --skip-quick-check         do not run PRAGMA quick_check at start, which refuses a damaged file;\n"
          "                             it reads the whole file once (a 670 MB file: 0.6 s cached, 24 s from a\n"
          "                             cold disk), so this is for very large files. `reprise admin check\n"
          "                             --db PATH` runs the full check at any time, also beside the server\n"
          "  --retention DURATION       delete a closed run this long after it closed: its history, visibility\n"
          "                             row, tasks, timers and blob references, and its workflow id's current run\n"
          "                             (the id is free again); blob collection (every 10 min) then removes the\n"
          "                             blobs nothing else references, once uploaded over an hour ago.\n"
          "                             7d, 12h, 30m or 45s; default 7d; 0 keeps every run.\n"
          "                             A running run is never deleted; `reprise workflow delete` deletes one now\n"
          "  --retention-sweep-interval DURATION  how often to look for runs past retention (default 1m)\n"
          "  --retention-batch N        runs deleted per batch, one short write transaction or a few (default 100)\n"
          "  --poll-timeout-ms N        how long an empty task poll waits\n"
          "  --history-warn-events N  --history-fail-events N  --history-warn-bytes N  --history-fail-bytes N\n"
          "  --max-pending-activities N  --max-pending-children N  --max-id-length N\n"
          "  --max-buffered-events N  --max-buffered-bytes N  signals held while a workflow task runs\n"
          "                             (default 1000 events, 2 MiB); beyond them a signal gets RESOURCE_EXHAUSTED\n"
          "  --max-pending-requests N  requests that change a workflow, in flight server-wide (default 10000)\n"
          "  --max-waiting-per-execution N  requests queued behind one workflow's running one (default 256);\n"
          "                             beyond either a request gets RESOURCE_EXHAUSTED and the SDK retries it\n"
          "  --max-pending-queries N    queries waiting for a worker's answer, server-wide (default 1000), counted\n"
          "                             apart from --max-pending-requests; beyond it a query gets RESOURCE_EXHAUSTED\n"
          "  --max-query-wait-ms N      the longest a query waits for its answer (default 60000); a longer client\n"
          "                             timeout is cut to it, and the query ends DEADLINE_EXCEEDED\n"
          "  --claim-check-threshold-bytes N  --blob-limit-bytes N\n"
          "  --log-level debug|info|warn|error|off\n"
          "  --log-format logfmt|json   one line per event on stderr: logfmt (default) or a JSON object\n"
          "A file that is not SQLite, another program's database or a newer schema is always refused.\n");
      std::exit(0);
    }
    if (flag == "--init-empty-file") {
      f.store.init_empty_file = true;
      continue;
    }
    if (flag == "--skip-quick-check") {
      f.store.quick_check = false;
      continue;
    }
    if (i + 1 >= argc) usage_error(flag + " needs a value");
    const char* value = argv[++i];
    auto& limits = f.engine.config.history_limits;
    if (flag == "--db")
      f.db = value;
    else if (flag == "--listen")
      f.listen = value;
    else if (flag == "--retention") {
      const std::chrono::milliseconds retention = parse_duration(flag, value);
      if (retention.count() % 1000 != 0) usage_error(flag + " is in whole seconds, got '" + value + "'");
      f.engine.retention = std::chrono::duration_cast<std::chrono::seconds>(retention);
    } else if (flag == "--retention-sweep-interval") {
      f.engine.retention_sweep_interval = parse_duration(flag, value);
      if (f.engine.retention_sweep_interval.count() == 0) usage_error(flag + " must be more than 0");
    } else if (flag == "--retention-batch") {
      f.engine.retention_batch = static_cast<int>(std::min<int64_t>(parse_int(flag, value), 10'000));
      if (f.engine.retention_batch == 0) usage_error(flag + " must be at least 1");
    } else if (flag == "--poll-timeout-ms")
      f.engine.poll_timeout = std::chrono::milliseconds(parse_int(flag, value));
    else if (flag == "--history-warn-events")
      limits.warn_events = parse_int(flag, value);
    else if (flag == "--history-fail-events")
      limits.fail_events = parse_int(flag, value);
    else if (flag == "--history-warn-bytes")
      limits.warn_bytes = parse_int(flag, value);
    else if (flag == "--history-fail-bytes")
      limits.fail_bytes = parse_int(flag, value);
    else if (flag == "--max-pending-activities")
      f.engine.config.max_pending_activities = static_cast<int>(parse_int(flag, value));
    else if (flag == "--max-pending-children")
      f.engine.config.max_pending_children = static_cast<int>(parse_int(flag, value));
    else if (flag == "--max-id-length")
      f.engine.config.max_id_length = static_cast<size_t>(parse_int(flag, value));
    else if (flag == "--max-buffered-events")
      f.engine.config.max_buffered_events = static_cast<int>(parse_int(flag, value));
    else if (flag == "--max-buffered-bytes")
      f.engine.config.max_buffered_bytes = parse_int(flag, value);
    else if (flag == "--max-pending-requests")
      f.engine.max_pending_requests = static_cast<size_t>(parse_int(flag, value));
    else if (flag == "--max-pending-queries")
      f.engine.max_pending_queries = static_cast<size_t>(parse_int(flag, value));
    else if (flag == "--max-query-wait-ms")
      f.engine.max_query_wait = std::chrono::milliseconds(parse_int(flag, value));
    else if (flag == "--max-waiting-per-execution")
      f.engine.max_waiting_per_execution = static_cast<size_t>(parse_int(flag, value));
    else if (flag == "--claim-check-threshold-bytes")
      f.engine.claim_check.threshold = static_cast<size_t>(parse_int(flag, value));
    else if (flag == "--blob-limit-bytes")
      f.engine.claim_check.blob_limit = parse_int(flag, value);
    else if (flag == "--log-level") {
      Result<log::Level> level = log::parse_level(value);
      if (!level) usage_error(level.status().message());
      log::set_level(*level);
    } else if (flag == "--log-format") {
      Result<log::Format> format = log::parse_format(value);
      if (!format) usage_error(format.status().message());
      log::set_format(*format);
    } else if (flag == "--durability") {
      if (std::strcmp(value, "full") == 0)
        f.store.durability = Durability::kFull;
      else if (std::strcmp(value, "normal") == 0)
        f.store.durability = Durability::kNormal;
      else
        usage_error("--durability is full or normal, got '" + std::string(value) + "'");
    } else {
      usage_error("unknown flag " + flag);
    }
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags = parse(argc, argv);
  // A full disk is logged once, then every 10 s with the attempts between,
  // and once more when writes go through again (TransitionWriter).
  flags.store.on_write_stall = [db = flags.db](const WriteStall& stall) {
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

  // Signals are taken synchronously by this thread, never by a handler.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  Result<std::unique_ptr<SqliteStore>> store = SqliteStore::open(flags.db, flags.store);
  if (!store) {
    std::fprintf(stderr, "reprise-server: %s\n", store.status().to_string().c_str());
    return 1;
  }
  const OpenReport& opened = (*store)->open_report();
  if (opened.created) {
    log::info("database created", {{"db", flags.db}});
  } else if (opened.quick_checked) {
    log::info(
        "database passed quick_check",
        {{"db", flags.db},
         {"pages", std::to_string(opened.pages)},
         {"quick_check_ms",
          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(opened.quick_check_time).count())}});
  } else {
    log::warn("database opened without quick_check (--skip-quick-check)", {{"db", flags.db}});
  }
  Result<std::unique_ptr<Engine>> engine = Engine::start(**store, flags.engine);
  if (!engine) {
    std::fprintf(stderr, "reprise-server: %s\n", engine.status().to_string().c_str());
    return 1;
  }
  // Torn down before the engine and the store: its payload streams' last
  // work (an upload's discard) writes to the store after the server is gone.
  auto service = std::make_unique<GrpcService>(**engine, (*store)->blobs(), flags.engine.claim_check.blob_limit);
  // The standard health service (grpc.health.v1.Health) and server
  // reflection (grpc.reflection.v1alpha, what grpcurl uses) beside ours.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(flags.listen, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service.get());
  builder.SetMaxReceiveMessageSize(64 << 20);
  builder.SetMaxSendMessageSize(64 << 20);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::fprintf(stderr, "reprise-server: cannot listen on %s\n", flags.listen.c_str());
    return 1;
  }
  ServingStatus serving_status(
      *server->GetHealthCheckService(), [&] { return (*engine)->server_problem(); }, std::chrono::seconds(1));
  const std::string host = flags.listen.substr(0, flags.listen.rfind(':'));
  std::printf("reprise-server listening on %s:%d (db %s)\n", host.c_str(), port, flags.db.c_str());
  log::info("server listening", {{"address", host + ":" + std::to_string(port)}, {"db", flags.db}});
  std::fflush(stdout);

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::printf("reprise-server: %s, shutting down\n", signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
  std::fflush(stdout);
  serving_status.stop_serving();  // load balancers stop sending new work
  (*engine)->shutdown();          // parked polls answer, operations in flight finish
  // Every call has its answer by now; the deadline only bounds how long gRPC
  // waits on idle client connections (it waits the whole deadline when any
  // is open), and 200 ms leaves time to flush the last answers.
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  server.reset();
  service.reset();  // waits for the payload streams' last store work
  engine->reset();
  store->reset();  // commits what is queued, then closes the database
  std::printf("reprise-server: stopped cleanly\n");
  log::info("server stopped");
  return 0;
}
