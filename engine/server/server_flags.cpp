#include "engine/server/server_flags.hpp"

#include <algorithm>

#include "engine/log.hpp"
#include "tools/command_line/command_line.hpp"
#include "tools/command_line/config_file.hpp"

namespace reprise::engine {

void add_server_flags(CLI::App& app, ServerFlags& f) {
  app.description("The Reprise workflow service on one SQLite file.");
  app.footer(
      "Durations: 90s, 1h30m, 7d, 250ms, or a number of seconds.\n"
      "A file that is not SQLite, another program's database or a newer schema is always refused.\n"
      "Exit status: 0 after a clean shutdown (SIGTERM or SIGINT), 1 when the database or the address cannot be\n"
      "used, 2 for a bad command line.");
  command_line::add_config_flag(app);
  app.add_option("--db", f.db,
                 "The SQLite file (a missing file is created), or a PostgreSQL database as "
                 "postgresql://USER[:PASSWORD]@HOST[:PORT]/DB (its schema is created in an empty database; "
                 "docs/storage.md, \"PostgreSQL\")")
      ->type_name("PATH|URL")
      ->capture_default_str();
  app.add_option("--shards", f.postgres.shard_count,
                 "PostgreSQL: the shards a new database's executions are spread over (fixed once it exists)")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  app.add_option_function<std::string>(
         "--postgres-commit-shape",
         [&f](const std::string& v) {
           f.postgres.commit_shape = v == "savepoints" ? PgCommitShape::kSavepoints : PgCommitShape::kPipelined;
         },
         "PostgreSQL: a group commit's statements pipelined, run again with a savepoint per transition only when a "
         "condition fails (pipelined, the default), or a savepoint per transition always (savepoints)")
      ->check(CLI::IsMember({"pipelined", "savepoints"}).description(""))
      ->type_name("pipelined|savepoints");
  app.add_option("--node-id", f.postgres.cluster.node_id,
                 "PostgreSQL: this node's name in the cluster of servers sharing the database, unique among them; "
                 "kept across restarts, the node takes its shards back at once (default HOST:PORT of --listen, or "
                 "the host name and a random suffix with port 0; docs/cluster.md)")
      ->type_name("NAME");
  app.add_option("--cluster-address", f.postgres.cluster.address,
                 "PostgreSQL: the address other nodes and clients reach this node at, announced to the cluster "
                 "(default the host name and the port it listens on)")
      ->type_name("HOST:PORT");
  command_line::add_duration_flag(
      app, "--shard-lease",
      [&f](std::chrono::milliseconds lease) {
        if (lease < std::chrono::milliseconds(100))
          throw CLI::ValidationError("--shard-lease", "must be at least 100ms");
        f.postgres.cluster.lease = lease;
      },
      "PostgreSQL: how long a node's shard leases last unrenewed (renewed every quarter of it): a node that "
      "crashes, pauses or is cut off loses its shards to the others after about this. Default 10s");
  // A node's pings to the others, each within the SDK's bounds.
  auto peer_keepalive = [&app](const std::string& name, std::chrono::milliseconds& into,
                               const std::string& description) {
    command_line::add_duration_flag(
        app, name,
        [&into, name](std::chrono::milliseconds value) {
          if (value < kMinPeerKeepalive || value > kMaxPeerKeepalive)
            throw CLI::ValidationError(name, "must be between 1s and 24h");
          into = value;
        },
        description);
  };
  peer_keepalive("--peer-keepalive-interval", f.peer_keepalive.interval,
                 "PostgreSQL cluster: how long a connection to another node may be quiet, while a call on it waits "
                 "(a forwarded request, a fanned-out poll, a transfer), before this node pings that node. Default "
                 "10s; docs/cluster.md, \"A node that stops answering\"");
  peer_keepalive("--peer-keepalive-timeout", f.peer_keepalive.timeout,
                 "PostgreSQL cluster: how long a ping to another node may go unanswered before the connection is "
                 "closed and its calls fail UNAVAILABLE (a client's forwarded call is then sent again). Default 5s");
  app.add_option("--listen", f.listen, "The address to serve on (port 0 picks one)")
      ->type_name("HOST:PORT")
      ->capture_default_str();
  app.add_option("--metrics-listen", f.metrics_listen,
                 "Serve Prometheus metrics at http://HOST:PORT/metrics (port 0 picks one; default: none). "
                 "docs/operations.md, \"Metrics\"")
      ->type_name("HOST:PORT");
  app.add_option("--ui-listen", f.ui_listen,
                 "Serve the web UI at http://HOST:PORT/ (port 0 picks one; default: none): loopback only unless "
                 "--insecure, as it asks for no login; the same address as --metrics-listen shares one listener. "
                 "docs/operations.md, \"Web UI\"")
      ->type_name("HOST:PORT");
  CLI::Option* cert =
      app.add_option("--tls-cert", f.tls.cert_file, "Serve TLS with this PEM certificate chain (with --tls-key)")
          ->type_name("FILE")
          ->check(CLI::ExistingFile);
  CLI::Option* key = app.add_option("--tls-key", f.tls.key_file, "The PEM private key of --tls-cert")
                         ->type_name("FILE")
                         ->check(CLI::ExistingFile);
  cert->needs(key);
  key->needs(cert);
  app.add_option("--tls-client-ca", f.tls.client_ca_file,
                 "Require every client to present a certificate signed by a CA in this PEM bundle (mutual TLS)")
      ->type_name("FILE")
      ->check(CLI::ExistingFile)
      ->needs(cert);
  app.add_option("--tls-peer-ca", f.tls.peer_ca_file,
                 "In a cluster of nodes that serve TLS: the PEM CA bundle the other nodes' certificates are checked "
                 "against when this node forwards a request to them (default: the system's roots); this node "
                 "presents its own --tls-cert to them. docs/cluster.md")
      ->type_name("FILE")
      ->check(CLI::ExistingFile)
      ->needs(cert);
  app.add_option("--tls-peer-server-name", f.tls.peer_server_name,
                 "In a cluster of nodes that serve TLS: the name the other nodes' certificates carry, when it is not "
                 "the host of their --cluster-address")
      ->type_name("NAME")
      ->needs(cert);
  app.add_flag("--insecure", f.tls.insecure,
               "Serve plaintext, with no API keys, and the web UI, on an address other than loopback (each refused "
               "without it): only behind something that secures and authenticates the connection");
  app.add_option_function<std::string>(
         "--durability",
         [&f](const std::string& v) { f.store.durability = v == "full" ? Durability::kFull : Durability::kNormal; },
         "fsync at every commit (full, the default) or at checkpoints (normal)")
      ->check(CLI::IsMember({"full", "normal"}).description(""))
      ->type_name("full|normal");
  app.add_flag_callback(
      "--init-empty-file", [&f] { f.store.init_empty_file = true; },
      "Start a new database in an existing empty (0-byte) file; without it such a file is refused, as it is more "
      "often a lost database than a new one");
  app.add_flag_callback(
      "--skip-quick-check", [&f] { f.store.quick_check = false; },
      "Do not run PRAGMA quick_check at start, which refuses a damaged file; it reads the whole file once (a 670 MB "
      "file: 0.6 s cached, 24 s from a cold disk), so this is for very large files. `reprise admin check --db PATH` "
      "runs the full check at any time, also beside the server");
  app.add_flag_callback(
      "--rotate-task-token-key", [&f] { f.store.rotate_task_token_key = true; },
      "Sign task tokens with a new key from now on; tokens signed with the key before it still verify, older ones "
      "are refused (docs/operations.md, \"Task tokens\")");

  command_line::add_duration_flag(
      app, "--retention",
      [&f](std::chrono::milliseconds retention) {
        if (retention.count() % 1000 != 0) throw CLI::ValidationError("--retention", "must be whole seconds");
        f.engine.retention = std::chrono::duration_cast<std::chrono::seconds>(retention);
      },
      "Delete a closed run this long after it closed: its history, visibility row, tasks, timers and blob "
      "references, and its workflow id's current run (the id is free again); blob collection (every 10 min) then "
      "removes the blobs nothing else references, once uploaded over an hour ago. Default 7d; 0 keeps every run. A "
      "running run is never deleted; `reprise workflow delete` deletes one now");
  command_line::add_duration_flag(
      app, "--retention-sweep-interval",
      [&f](std::chrono::milliseconds interval) {
        if (interval.count() == 0) throw CLI::ValidationError("--retention-sweep-interval", "must be more than 0");
        f.engine.retention_sweep_interval = interval;
      },
      "How often to look for runs past retention (default 1m)");
  app.add_option_function<int>(
         "--retention-batch", [&f](int n) { f.engine.retention_batch = std::min(n, 10'000); },
         "Runs deleted per batch, one short write transaction or a few (default 100, at most 10000)")
      ->check(command_line::whole_number(1))
      ->type_name("N");

  command_line::add_duration_flag(
      app, "--max-held-start", [&f](std::chrono::milliseconds hold) { f.engine.max_held_start = hold; },
      "How long a task handed to a poller may stay started in memory only, committed with the workflow's next "
      "change (normally the task's completion); a crash meanwhile hands the task out again (docs/engine.md, \"Tasks "
      "started in memory\"). Default 2s; 0 commits every start before the task is handed out");
  app.add_option_function<int64_t>(
         "--poll-timeout-ms", [&f](int64_t ms) { f.engine.poll_timeout = std::chrono::milliseconds(ms); },
         "How long an empty task poll waits, in milliseconds (default 60000)")
      ->check(command_line::whole_number(0))
      ->type_name("N");

  // Whole numbers, none negative.
  auto count = [&app](const std::string& name, auto& into, const std::string& description) {
    app.add_option(name, into, description)
        ->check(command_line::whole_number(0))
        ->type_name("N")
        ->capture_default_str();
  };
  auto& limits = f.engine.config.history_limits;
  count("--history-warn-events", limits.warn_events, "A run's history past this many events logs a warning");
  count("--history-fail-events", limits.fail_events, "A run's history past this many events fails the run");
  count("--history-warn-bytes", limits.warn_bytes, "A run's history past this size logs a warning");
  count("--history-fail-bytes", limits.fail_bytes, "A run's history past this size fails the run");
  count("--max-pending-activities", f.engine.config.max_pending_activities,
        "Activities one run may have scheduled and not closed");
  count("--max-pending-children", f.engine.config.max_pending_children,
        "Child workflows one run may have started and not closed");
  count("--max-id-length", f.engine.config.max_id_length, "The longest workflow, activity, timer or signal id");
  count("--max-buffered-events", f.engine.config.max_buffered_events,
        "Signals held while a workflow task runs; beyond them a signal gets RESOURCE_EXHAUSTED");
  count("--max-buffered-bytes", f.engine.config.max_buffered_bytes,
        "Bytes of signals held while a workflow task runs; beyond them a signal gets RESOURCE_EXHAUSTED");
  count("--max-pending-requests", f.engine.max_pending_requests,
        "Requests that change a workflow, in flight server-wide; beyond it a request gets RESOURCE_EXHAUSTED and the "
        "SDK retries it");
  count("--max-waiting-per-execution", f.engine.max_waiting_per_execution,
        "Requests queued behind one workflow's running one; beyond it a request gets RESOURCE_EXHAUSTED");
  count("--max-pending-queries", f.engine.max_pending_queries,
        "Queries waiting for a worker's answer, server-wide, counted apart from --max-pending-requests; beyond it a "
        "query gets RESOURCE_EXHAUSTED");
  app.add_option_function<int64_t>(
         "--max-query-wait-ms", [&f](int64_t ms) { f.engine.max_query_wait = std::chrono::milliseconds(ms); },
         "The longest a query waits for its answer, in milliseconds (default 60000); a longer client timeout is cut to "
         "it, and the query ends DEADLINE_EXCEEDED")
      ->check(command_line::whole_number(0))
      ->type_name("N");
  count("--execution-cache-entries", f.engine.execution_cache_entries,
        "Workflow runs whose state and recent history are kept in memory after a commit, so their next transition "
        "and reads do not go to the database (0 keeps none)");
  count("--execution-cache-bytes", f.engine.execution_cache_bytes,
        "The most bytes of state and history those runs keep, the least recently used going first");
  count("--claim-check-threshold-bytes", f.engine.claim_check.threshold,
        "Payloads larger than this are stored once as blobs and referenced by hash");
  count("--blob-limit-bytes", f.engine.claim_check.blob_limit, "The largest blob the server accepts");

  app.add_option_function<std::string>(
         "--log-level",
         [](const std::string& v) {
           Result<log::Level> level = log::parse_level(v);
           if (!level) throw CLI::ValidationError("--log-level", level.status().message());
           log::set_level(*level);
         },
         "The least severe log line written (default info)")
      ->type_name("debug|info|warn|error|off");
  app.add_option_function<std::string>(
         "--log-format",
         [](const std::string& v) {
           Result<log::Format> format = log::parse_format(v);
           if (!format) throw CLI::ValidationError("--log-format", format.status().message());
           log::set_format(*format);
         },
         "One line per event on stderr: logfmt (default) or a JSON object")
      ->type_name("logfmt|json");
}

}  // namespace reprise::engine
