// sdk_driver: the SDK and worker end to end on this machine.
//
//   sdk_driver --server PATH/reprise-server hello [--seconds 5] [--rounds 3] [--levels 1,8,64] [--local]
//       hello workflows (one activity) per second through a real Worker and
//       Client, remote (server process on loopback) and embedded (engine in
//       this process), levels and modes interleaved across rounds; median
//       and min–max over rounds, p50/p99 start-to-close latency. --local
//       adds hello_local (the activity run with ctx.execute_local),
//       interleaved with hello, and prints the history of one of each.
//       --eager-start starts every workflow with StartOptions::eager_start
//       (the worker shares the client's connection, so the start's answer
//       brings the first workflow task). --metrics adds a second server
//       process with --metrics-listen (mode remote-metrics), interleaved with
//       the first, and scrapes its /metrics once at the end.
//       --baseline-server PATH adds a server built from other sources (mode
//       remote-baseline), interleaved with the first: before and after a
//       change side by side in one run. Each mode's CPU ms and voluntary
//       context switches per workflow are printed for the server process
//       and for this one (client and worker).
//       REPRISE_BENCH_POSTGRES=postgresql://... (an empty database) adds a
//       server on PostgreSQL (mode remote-postgres), and
//       REPRISE_BENCH_POSTGRES_SAVEPOINTS (another) one whose group commit
//       takes a savepoint per transition (remote-pg-savepoints), and
//       REPRISE_BENCH_POSTGRES_BASELINE (a third) the --baseline-server on
//       PostgreSQL (remote-pg-baseline).
//       --cluster 1,2,3 adds, for each count N, a cluster of N server nodes
//       over one PostgreSQL this process starts (initdb into a temporary
//       directory, fsync on, as shipped), each cluster on a database of its
//       own (mode cluster-N): one worker per node, connected to it, and the
//       driver's threads spread over the nodes (thread t asks node t mod N),
//       as a load balancer would. CPU is summed over the N nodes, and
//       PostgreSQL's (postmaster and backends) is its own column.
//   sdk_driver --server PATH/reprise-server parked [--count 10000]
//              [--style stackless|stackful] [--stack-kib 64] [--no-guard]
//       memory per cached parked workflow: `count` workflows waiting on a
//       signal in one worker; this process's RSS growth divided by count.
//       Stackful ones run on stacks of --stack-kib (each guarded stack is two
//       memory mappings: beyond ~32,000 raise vm.max_map_count).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "child_process.hpp"
#include "engine/store/shard.hpp"
#include "http_exchange.hpp"
#include "reprise/client.hpp"
#include "reprise/stackful.hpp"
#include "reprise/worker.hpp"
#include "storage_stats_report.hpp"
#include "store_test_util.hpp"
#include "test_postgres.hpp"
#include "tools/command_line/command_line.hpp"

using namespace reprise;
using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

namespace {

std::string greet(ActivityContext&, std::string name) { return "Hello, " + name; }
inline constexpr Activity<&greet> greet_activity{"greet"};
Workflow<std::string> hello(WorkflowContext& ctx, std::string name) {
  co_return co_await ctx.execute(greet_activity, ActivityOptions::start_to_close(10s), name);
}
inline constexpr WorkflowDef<&hello> hello_wf{"hello"};
// The same greeting as a local activity: the whole workflow is one workflow task.
Workflow<std::string> hello_local(WorkflowContext& ctx, std::string name) {
  co_return co_await ctx.execute_local(greet_activity, LocalActivityOptions::start_to_close(10s), name);
}
inline constexpr WorkflowDef<&hello_local> hello_local_wf{"hello_local"};

// "N events, M workflow tasks" of workflow `id`'s history.
std::string history_shape(Connection& connection, const std::string& id) {
  v1::GetHistoryRequest r;
  r.mutable_workflow_execution()->set_workflow_id(id);
  const v1::History history = connection.get_history(r, 10s).history();
  int tasks = 0;
  std::string types;
  for (const auto& e : history.events()) {
    tasks += e.event_type() == v1::EVENT_TYPE_WORKFLOW_TASK_STARTED;
    types += (types.empty() ? "" : ", ") + v1::EventType_Name(e.event_type()).substr(sizeof("EVENT_TYPE_") - 1);
  }
  return std::to_string(history.events_size()) + " events, " + std::to_string(tasks) + " workflow task(s): " + types;
}

std::atomic<int64_t> parked{0};
inline constexpr Signal<int64_t> wake{"wake"};
Workflow<int64_t> park(WorkflowContext& ctx) {
  ++parked;
  co_return co_await ctx.wait(wake);
}
inline constexpr WorkflowDef<&park> park_wf{"park"};
int64_t park_stackful(StackfulContext& ctx) {
  ++parked;
  return ctx.wait(wake);
}
inline constexpr WorkflowDef<&park_stackful> park_stackful_wf{"park_stackful"};

std::unique_ptr<engine::testing::ChildProcess> start_server(const std::string& binary, const std::string& db,
                                                            std::string& address, bool metrics = false,
                                                            std::string* metrics_address = nullptr,
                                                            const std::vector<std::string>& extra_flags = {}) {
  std::vector<std::string> args{binary, "--db",        db,    "--listen", "127.0.0.1:0", "--poll-timeout-ms",
                                "2000", "--log-level", "warn"};
  if (metrics) args.insert(args.end(), {"--metrics-listen", "127.0.0.1:0"});
  args.insert(args.end(), extra_flags.begin(), extra_flags.end());
  auto p = std::make_unique<engine::testing::ChildProcess>(args);
  std::string line;
  if (!p->read_line(line) || (address = engine::testing::loopback_address_after(line, "listening on")).empty()) {
    std::fprintf(stderr, "sdk_driver: the server did not start\n");
    std::exit(1);
  }
  if (metrics_address != nullptr) *metrics_address = engine::testing::loopback_address_after(line, "metrics on");
  return p;
}

int64_t rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// What a process has spent so far: CPU time (user + system, all threads)
// and voluntary context switches (a thread that blocks: what a hand-off
// from thread to thread costs; preemption, which follows the machine's
// load, is left out), summed over its live threads: /proc/PID/status counts
// its main thread's alone.
struct ProcessCounters {
  double cpu_ms = 0;
  int64_t switches = 0;
};

ProcessCounters process_counters(pid_t pid) {
  ProcessCounters c;
  const std::string dir = "/proc/" + std::to_string(pid);
  std::ifstream stat(dir + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return c;  // the process is gone (a database backend that closed)
  // utime and stime are fields 14 and 15; the command (field 2) may hold spaces, so count from its ')'.
  std::istringstream fields(text.substr(paren + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::stod(field);
  }
  c.cpu_ms = ticks * 1000.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
  std::error_code ignored;
  for (const auto& task : std::filesystem::directory_iterator(dir + "/task", ignored)) {
    std::ifstream status(task.path() / "status");
    for (std::string line; std::getline(status, line);) {
      if (line.starts_with("voluntary_ctxt_switches:")) {
        c.switches += std::stoll(line.substr(line.find(':') + 1));
      }
    }
  }
  return c;
}

// The sum of process_counters over `pids`.
ProcessCounters sum_of_counters(const std::vector<pid_t>& pids) {
  ProcessCounters sum;
  for (pid_t pid : pids) {
    const ProcessCounters c = process_counters(pid);
    sum.cpu_ms += c.cpu_ms;
    sum.switches += c.switches;
  }
  return sum;
}

// `root` and its live children: a PostgreSQL postmaster and its backends.
std::vector<pid_t> process_and_children(pid_t root) {
  std::vector<pid_t> pids{root};
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ignored)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t paren = text.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(text.substr(paren + 2));  // state, then the parent's pid
    std::string state;
    pid_t parent = 0;
    if (fields >> state >> parent && parent == root) pids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return pids;
}

struct Level {
  double per_second = 0;
  double p50_ms = 0, p99_ms = 0;
  int64_t workflows = 0;
  std::string storage;  // remote: bench::per_workflow for the run
  // The run's slowest workflow, whose history shows where its time went.
  std::string slowest_id;
  double slowest_ms = 0;
  // Per workflow: the server processes' (none when embedded), this one's
  // (client and worker; the embedded engine too) and the database's (the
  // PostgreSQL of a cluster mode) CPU ms and context switches.
  ProcessCounters server, driver, database;
};

// `after` minus `before`, per workflow.
ProcessCounters per_workflow(const ProcessCounters& before, const ProcessCounters& after, int64_t workflows) {
  const double n = workflows > 0 ? static_cast<double>(workflows) : 1.0;
  return {(after.cpu_ms - before.cpu_ms) / n,
          static_cast<int64_t>(static_cast<double>(after.switches - before.switches) / n + 0.5)};
}

// Thread t of `concurrency` starts its workflows through clients[t % size].
Level run_level(const std::vector<std::unique_ptr<Client>>& clients, int concurrency, int seconds,
                const std::string& tag, bool local, bool eager_start) {
  std::atomic<int64_t> done{0};
  std::mutex mu;
  std::vector<double> latencies;
  std::string slowest_id;
  double slowest_ms = 0;
  const auto end = Steady::now() + std::chrono::seconds(seconds);
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t) {
    threads.emplace_back([&, t] {
      std::vector<double> mine;
      Client& client = *clients[static_cast<size_t>(t) % clients.size()];
      std::string my_slowest_id;
      double my_slowest_ms = 0;
      for (int64_t i = 0; Steady::now() < end; ++i) {
        const auto start = Steady::now();
        const std::string id = tag + "-" + std::to_string(t) + "-" + std::to_string(i);
        if (local) {
          client.execute(hello_local_wf, {.id = id, .task_queue = "bench", .eager_start = eager_start},
                         std::string("bench"));
        } else {
          client.execute(hello_wf, {.id = id, .task_queue = "bench", .eager_start = eager_start}, std::string("bench"));
        }
        mine.push_back(std::chrono::duration<double, std::milli>(Steady::now() - start).count());
        if (mine.back() > my_slowest_ms) {
          my_slowest_ms = mine.back();
          my_slowest_id = id;
        }
        ++done;
      }
      std::lock_guard lock(mu);
      latencies.insert(latencies.end(), mine.begin(), mine.end());
      if (my_slowest_ms > slowest_ms) {
        slowest_ms = my_slowest_ms;
        slowest_id = my_slowest_id;
      }
    });
  }
  const auto started = Steady::now();
  for (auto& th : threads) th.join();
  const double elapsed = std::chrono::duration<double>(Steady::now() - started).count();
  std::sort(latencies.begin(), latencies.end());
  Level l;
  l.workflows = done;
  l.per_second = static_cast<double>(done) / elapsed;
  l.slowest_id = slowest_id;
  l.slowest_ms = slowest_ms;
  if (!latencies.empty()) {
    l.p50_ms = latencies[latencies.size() / 2];
    l.p99_ms = latencies[std::min(latencies.size() - 1, latencies.size() * 99 / 100)];
  }
  return l;
}

// Starts a cluster of `nodes` servers on a new database of `postgres` and
// waits until every node serves some of the shards. Empty on failure.
std::vector<std::unique_ptr<engine::testing::ChildProcess>> start_cluster(const std::string& server_binary,
                                                                          engine::testing::TestPostgres& postgres,
                                                                          int nodes,
                                                                          std::vector<std::string>& addresses) {
  const std::string url = postgres.new_database();
  std::vector<std::unique_ptr<engine::testing::ChildProcess>> servers;
  if (url.empty()) return servers;
  for (int i = 0; i < nodes; ++i) {
    std::string address;
    servers.push_back(
        start_server(server_binary, url, address, false, nullptr, {"--node-id", "node-" + std::to_string(i)}));
    addresses.push_back(address);
  }
  auto db = engine::PgConnection::connect(url);
  if (!db) return {};
  const auto deadline = Steady::now() + 60s;
  for (;;) {
    auto owners = (*db)->query("SELECT count(DISTINCT owner), count(*) FROM shards WHERE expires_at > now()");
    if (owners && owners->get_int(0, 0) == nodes && owners->get_int(0, 1) == engine::kDefaultShardCount) break;
    if (Steady::now() > deadline) {
      std::fprintf(stderr, "sdk_driver: the %d-node cluster did not spread its shards within 60 s\n", nodes);
      std::exit(1);
    }
    std::this_thread::sleep_for(100ms);
  }
  return servers;
}

int hello_mode(const std::string& server_binary, const std::string& baseline_binary, int seconds, int rounds,
               const std::vector<int>& levels, bool local, bool eager_start, bool metrics,
               const std::vector<int>& cluster_sizes) {
  std::vector<std::string> variants = {"hello"};
  if (local) variants.push_back("local");
  engine::testing::TempDir dir;
  std::string address;
  auto server = start_server(server_binary, dir.file("remote.db"), address);
  // Each mode's connections: one per server node (the embedded mode's is
  // its engine).
  std::map<std::string, std::vector<std::shared_ptr<Connection>>> connections{
      {"remote", {Connection::remote(address)}}, {"embedded", {Connection::embedded(dir.file("embedded.db"))}}};
  // The processes serving each remote mode, whose CPU and switches are counted.
  std::map<std::string, std::vector<pid_t>> server_pids{{"remote", {server->pid()}}};
  std::unique_ptr<engine::testing::ChildProcess> baseline_server;
  std::string baseline_address;
  if (!baseline_binary.empty()) {
    baseline_server = start_server(baseline_binary, dir.file("baseline.db"), baseline_address);
    connections["remote-baseline"] = {Connection::remote(baseline_address)};
    server_pids["remote-baseline"] = {baseline_server->pid()};
  }
  std::string metrics_server_address, metrics_address;
  std::unique_ptr<engine::testing::ChildProcess> metrics_server;
  if (metrics) {
    metrics_server =
        start_server(server_binary, dir.file("metrics.db"), metrics_server_address, true, &metrics_address);
    connections["remote-metrics"] = {Connection::remote(metrics_server_address)};
    server_pids["remote-metrics"] = {metrics_server->pid()};
  }
  // REPRISE_BENCH_POSTGRES=postgresql://... (an empty database): one more
  // server on it, mode remote-postgres; REPRISE_BENCH_POSTGRES_SAVEPOINTS (a
  // second empty database): one whose group commit takes a savepoint per
  // transition (--postgres-commit-shape savepoints), mode remote-pg-savepoints;
  // REPRISE_BENCH_POSTGRES_BASELINE (a third, with --baseline-server): the
  // baseline server on PostgreSQL, mode remote-pg-baseline.
  std::vector<std::unique_ptr<engine::testing::ChildProcess>> postgres_servers;
  for (auto [variable, mode, shape, baseline] :
       {std::tuple{"REPRISE_BENCH_POSTGRES", "remote-postgres", "pipelined", false},
        std::tuple{"REPRISE_BENCH_POSTGRES_SAVEPOINTS", "remote-pg-savepoints", "savepoints", false},
        std::tuple{"REPRISE_BENCH_POSTGRES_BASELINE", "remote-pg-baseline", "pipelined", true}}) {
    const char* url = std::getenv(variable);
    if (url == nullptr || (baseline && baseline_binary.empty())) continue;
    std::string pg_address;
    postgres_servers.push_back(start_server(baseline ? baseline_binary : server_binary, url, pg_address, false, nullptr,
                                            {"--postgres-commit-shape", shape}));
    connections[mode] = {Connection::remote(pg_address)};
    server_pids[mode] = {postgres_servers.back()->pid()};
  }
  // --cluster: the clusters, each on a database of one PostgreSQL of this
  // process's, whose postmaster and backends are counted as the database.
  std::map<std::string, pid_t> database_pids;
  for (int nodes : cluster_sizes) {
    std::string why;
    engine::testing::TestPostgres* postgres = engine::testing::TestPostgres::get(&why);
    if (postgres == nullptr) {
      std::fprintf(stderr, "sdk_driver: --cluster needs PostgreSQL: %s\n", why.c_str());
      return 1;
    }
    std::vector<std::string> addresses;
    auto nodes_started = start_cluster(server_binary, *postgres, nodes, addresses);
    if (nodes_started.empty()) {
      std::fprintf(stderr, "sdk_driver: cannot start a %d-node cluster\n", nodes);
      return 1;
    }
    const std::string mode = "cluster-" + std::to_string(nodes);
    for (size_t i = 0; i < nodes_started.size(); ++i) {
      connections[mode].push_back(Connection::remote(addresses[i]));
      server_pids[mode].push_back(nodes_started[i]->pid());
      postgres_servers.push_back(std::move(nodes_started[i]));
    }
    database_pids[mode] = postgres->pid();
  }
  std::vector<std::unique_ptr<Worker>> workers;  // one per connection
  for (auto& [mode, mode_connections] : connections) {
    for (auto& connection : mode_connections) {
      auto w = std::make_unique<Worker>(connection, WorkerOptions{.task_queue = "bench",
                                                                  .workflow_threads = 2,
                                                                  .activity_threads = 2,
                                                                  .workflow_pollers = 2,
                                                                  .activity_pollers = 2});
      w->register_workflow(hello_wf);
      w->register_workflow(hello_local_wf);
      w->register_activity(greet_activity);
      w->start();
      workers.push_back(std::move(w));
    }
  }
  // The SQLite servers' store counts: the new build's and the baseline's.
  std::map<std::string, std::unique_ptr<v1::WorkflowService::Stub>> stats_stubs;
  stats_stubs["remote"] =
      v1::WorkflowService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  if (baseline_server) {
    stats_stubs["remote-baseline"] =
        v1::WorkflowService::NewStub(grpc::CreateChannel(baseline_address, grpc::InsecureChannelCredentials()));
  }
  std::map<std::string, std::vector<Level>> results;
  int tag = 0;
  for (int round = 0; round < rounds; ++round) {
    for (int level : levels) {
      for (const std::string& variant : variants) {
        // The modes in turn, the order reversed every other round: none
        // always runs right after another's load.
        std::vector<std::string> modes;
        for (const auto& [mode, connection] : connections) modes.push_back(mode);
        if (round % 2 == 1) std::reverse(modes.begin(), modes.end());
        for (const std::string& mode : modes) {
          std::vector<std::unique_ptr<Client>> clients;
          for (auto& connection : connections[mode]) clients.push_back(std::make_unique<Client>(connection));
          v1::WorkflowService::Stub* stats_stub = stats_stubs.contains(mode) ? stats_stubs[mode].get() : nullptr;
          const v1::GetStorageStatsResponse before =
              stats_stub ? bench::storage_stats(*stats_stub) : v1::GetStorageStatsResponse();
          const std::vector<pid_t>& servers = server_pids[mode];
          const std::vector<pid_t> database =
              database_pids.contains(mode) ? process_and_children(database_pids[mode]) : std::vector<pid_t>{};
          const ProcessCounters server_before = sum_of_counters(servers);
          const ProcessCounters database_before = sum_of_counters(database);
          const ProcessCounters driver_before = process_counters(getpid());
          Level l = run_level(clients, level, seconds, "r" + std::to_string(tag++), variant == "local", eager_start);
          l.driver = per_workflow(driver_before, process_counters(getpid()), l.workflows);
          l.server = per_workflow(server_before, sum_of_counters(servers), l.workflows);
          l.database = per_workflow(database_before, sum_of_counters(database), l.workflows);
          if (l.slowest_ms > 1000) {  // far beyond one workflow's work: its history says what it waited for
            std::printf("round %d, %s %d: slowest %s took %.0f ms: %s\n", round + 1, mode.c_str(), level,
                        l.slowest_id.c_str(), l.slowest_ms,
                        history_shape(*connections[mode].front(), l.slowest_id).c_str());
          }
          if (stats_stub) {
            l.storage = bench::per_workflow(before, bench::storage_stats(*stats_stub), l.workflows);
            std::printf("round %d, %s %d: %s\n", round + 1, mode.c_str(), level, l.storage.c_str());
          }
          results[mode + " " + variant + " " + std::to_string(level)].push_back(std::move(l));
        }
      }
    }
  }
  // Each column's median over the rounds, with its range.
  auto median = [](const std::vector<Level>& runs, auto of) {
    std::vector<double> v;
    for (const Level& l : runs) v.push_back(static_cast<double>(of(l)));
    std::sort(v.begin(), v.end());
    return std::tuple{v[v.size() / 2], v.front(), v.back()};
  };
  std::printf("%-26s %22s %20s %8s %20s %20s %20s %14s %14s\n", "mode variant level", "workflows/s [range]",
              "p50 ms [range]", "p99 ms", "server CPU ms/wf", "driver CPU ms/wf", "database CPU ms/wf", "server sw/wf",
              "driver sw/wf");
  for (auto& [key, runs] : results) {
    auto [rate, rate_lo, rate_hi] = median(runs, [](const Level& l) { return l.per_second; });
    auto [p50, p50_lo, p50_hi] = median(runs, [](const Level& l) { return l.p50_ms; });
    auto [p99, p99_lo, p99_hi] = median(runs, [](const Level& l) { return l.p99_ms; });
    auto [scpu, scpu_lo, scpu_hi] = median(runs, [](const Level& l) { return l.server.cpu_ms; });
    auto [dcpu, dcpu_lo, dcpu_hi] = median(runs, [](const Level& l) { return l.driver.cpu_ms; });
    auto [bcpu, bcpu_lo, bcpu_hi] = median(runs, [](const Level& l) { return l.database.cpu_ms; });
    auto [ssw, ssw_lo, ssw_hi] = median(runs, [](const Level& l) { return l.server.switches; });
    auto [dsw, dsw_lo, dsw_hi] = median(runs, [](const Level& l) { return l.driver.switches; });
    std::printf(
        "%-26s %6.0f [%5.0f-%5.0f] %6.2f [%5.2f-%5.2f] %8.1f %6.2f [%4.2f-%4.2f] %6.2f [%4.2f-%4.2f] %6.2f "
        "[%4.2f-%4.2f] %4.0f [%3.0f-%3.0f] %4.0f [%3.0f-%3.0f]\n",
        key.c_str(), rate, rate_lo, rate_hi, p50, p50_lo, p50_hi, p99, scpu, scpu_lo, scpu_hi, dcpu, dcpu_lo, dcpu_hi,
        bcpu, bcpu_lo, bcpu_hi, ssw, ssw_lo, ssw_hi, dsw, dsw_lo, dsw_hi);
  }
  if (metrics) {
    const auto started = Steady::now();
    const std::string page = testing_http::scrape_metrics(metrics_address);
    std::printf("scraped %s/metrics once: %zu bytes in %.1f ms, %s\n", metrics_address.c_str(), page.size(),
                std::chrono::duration<double, std::milli>(Steady::now() - started).count(),
                page.find("HTTP/1.1 200") == 0 && page.find("\nservice_requests_total{") != std::string::npos
                    ? "with service_requests_total"
                    : "WITHOUT the expected series");
  }
  Connection& sqlite_server = *connections["remote"].front();
  Client remote(connections["remote"].front());
  remote.execute(hello_wf, {.id = "shape-hello", .task_queue = "bench", .eager_start = eager_start},
                 std::string("bench"));
  std::printf("hello:       %s\n", history_shape(sqlite_server, "shape-hello").c_str());
  if (local) {
    remote.execute(hello_local_wf, {.id = "shape-local", .task_queue = "bench"}, std::string("bench"));
    std::printf("hello_local: %s\n", history_shape(sqlite_server, "shape-local").c_str());
  }
  for (auto& w : workers) w->stop();
  server->kill(SIGTERM);
  server->wait();
  if (baseline_server) {
    baseline_server->kill(SIGTERM);
    baseline_server->wait();
  }
  return 0;
}

template <auto Fn>
int parked_mode(const std::string& server_binary, int64_t count, const WorkflowDef<Fn>& park_def, StackOptions stack) {
  engine::testing::TempDir dir;
  std::string address;
  auto server = start_server(server_binary, dir.file("parked.db"), address);
  auto connection = Connection::remote(address);
  Worker worker(connection, {.task_queue = "park",
                             .workflow_threads = 2,
                             .activity_threads = 1,
                             .cache_size = static_cast<int>(count) + 1000,
                             .cache_bytes = size_t{16} << 30,
                             .stack = stack});
  worker.register_workflow(park_def);
  worker.start();
  Client client(connection);
  // Warm up: the allocator's and gRPC's own growth should not count.
  for (int i = 0; i < 200; ++i) client.start(park_def, {.id = "warm-" + std::to_string(i), .task_queue = "park"});
  while (parked < 200) std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(500ms);
  const int64_t before = rss_bytes();
  const auto started = Steady::now();
  std::vector<std::thread> starters;
  for (int t = 0; t < 8; ++t) {
    starters.emplace_back([&, t] {
      for (int64_t i = t; i < count; i += 8) {
        client.start(park_def, {.id = "park-" + std::to_string(i), .task_queue = "park"});
      }
    });
  }
  for (auto& s : starters) s.join();
  while (parked < count + 200) std::this_thread::sleep_for(50ms);
  std::this_thread::sleep_for(500ms);
  const int64_t after = rss_bytes();
  std::printf("parked %lld %s workflows in %.1f s; RSS %lld -> %lld MiB; %.0f bytes per parked workflow\n",
              static_cast<long long>(count), park_def.name,
              std::chrono::duration<double>(Steady::now() - started).count(), static_cast<long long>(before >> 20),
              static_cast<long long>(after >> 20), static_cast<double>(after - before) / static_cast<double>(count));
  worker.stop();
  server->kill(SIGTERM);
  server->wait();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string server, baseline_server, mode;
  int seconds = 5, rounds = 3;
  int64_t count = 10000;
  std::string style = "stackless";
  StackOptions stack;
  int64_t stack_kib = static_cast<int64_t>(stack.bytes / 1024);
  std::vector<int> levels = {1, 8, 64};
  bool local = false;
  bool eager_start = false;
  bool metrics = false;
  bool no_guard = false;
  std::vector<int> cluster_sizes;
  CLI::App app("The SDK and worker end to end: hello throughput and latency, or memory per parked workflow",
               "sdk_driver");
  command_line::set_up(app);
  app.add_option("mode", mode, "hello or parked")->required()->check(CLI::IsMember({"hello", "parked"}));
  app.add_option("--server", server, "The reprise-server binary")->required()->type_name("PATH");
  app.add_option("--seconds", seconds, "hello: seconds per level and round")->check(command_line::whole_number(1));
  app.add_option("--rounds", rounds, "hello: rounds (median and range over them)")
      ->check(command_line::whole_number(1));
  app.add_option("--levels", levels, "hello: workflows in flight, comma-separated")
      ->delimiter(',')
      ->check(command_line::whole_number(1, 100000));
  app.add_option("--baseline-server", baseline_server,
                 "hello: another reprise-server binary (an older build, say), run as mode remote-baseline "
                 "interleaved with the first")
      ->type_name("PATH");
  app.add_flag("--local", local, "hello: add hello_local (the activity run with ctx.execute_local)");
  app.add_flag("--eager-start", eager_start, "hello: start every workflow with StartOptions::eager_start");
  app.add_option("--cluster", cluster_sizes,
                 "hello: clusters of these many nodes over a PostgreSQL this process starts, comma-separated (modes "
                 "cluster-N)")
      ->delimiter(',')
      ->check(command_line::whole_number(1, 16));
  app.add_flag("--metrics", metrics, "hello: add a server with --metrics-listen (mode remote-metrics)");
  app.add_option("--count", count, "parked: workflows to park")->check(command_line::whole_number(1));
  app.add_option("--style", style, "parked: stackless or stackful")->check(CLI::IsMember({"stackless", "stackful"}));
  app.add_option("--stack-kib", stack_kib, "parked, stackful: KiB per stack")
      ->check(command_line::whole_number(4, 1 << 20));
  app.add_flag("--no-guard", no_guard, "parked, stackful: no guard page below each stack");
  if (std::optional<int> exit_code = command_line::parse(app, argc, argv)) return *exit_code;
  stack.bytes = static_cast<size_t>(stack_kib) * 1024;
  if (no_guard) stack.guard_page = false;
  if (mode == "hello")
    return hello_mode(server, baseline_server, seconds, rounds, levels, local, eager_start, metrics, cluster_sizes);
  return style == "stackful" ? parked_mode(server, count, park_stackful_wf, stack)
                             : parked_mode(server, count, park_wf, stack);
}
