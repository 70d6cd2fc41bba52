// reprise: the command line for a running reprise-server.
//
//   reprise [--address HOST:PORT] [--output text|json] workflow start --type checkout --id order-7
//           --task-queue orders --input '{"id":"o7","cents":1250}'
//   reprise admin check --db PATH
//
// Inputs and outputs are JSON, converted to and from the msgpack payloads
// workflows use. Exit status: 0 done, 1 the server or the workflow said no
// (or `admin check` found damage), 2 the command line is wrong.
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/store/file_check.hpp"
#include "reprise/client.hpp"
#include "reprise/detail/proto_time.hpp"
#include "reprise/history_file.hpp"
#include "tools/cli/event_line.hpp"
#include "tools/cli/json_payload.hpp"

namespace reprise::cli {
namespace {

constexpr const char* kUsage = R"(usage: reprise [--address HOST:PORT] [--output text|json] COMMAND [FLAGS]

  workflow start      --type T --id ID --task-queue Q [--input JSON]... [--execution-timeout SECONDS]
                      [--request-id R] [--id-reuse-policy allow_duplicate|allow_duplicate_failed_only|reject_duplicate]
                      [--retry-maximum-attempts N] [--retry-initial-interval SECONDS]
                      [--retry-backoff-coefficient X] [--retry-maximum-interval SECONDS]
                      [--retry-non-retryable-types TYPE,TYPE...]
  workflow execute    (as start; then waits and prints the result)
  workflow result     --id ID [--run-id R] [--timeout SECONDS]
  workflow describe   --id ID [--run-id R]
  workflow show       --id ID [--run-id R]      the history, one line per event
  workflow list       [--type T] [--task-queue Q] [--status running|completed|failed|canceled|terminated|timed_out|continued_as_new] [--limit N]
  workflow signal     --id ID --name SIGNAL [--input JSON] [--request-id R]
  workflow query      --id ID --name QUERY
  workflow cancel     --id ID [--reason TEXT]
  workflow terminate  --id ID [--reason TEXT]
  workflow delete     --id ID [--run-id R]
                      deletes the run (the current one without --run-id) now: its history,
                      visibility row, tasks, timers and blob references; a running run is
                      terminated first. Deleting the current run frees the id for a new start.
                      The server deletes closed runs by itself after its retention period
                      (reprise-server --retention, default 7 days).
  history export      --id ID [--run-id R] --file PATH [--format json|binary]
  admin check         --db PATH [--quick true]
                      checks the database file itself, read-only (no server needed, and safe
                      while one runs): that it is a Reprise database, then SQLite's full
                      PRAGMA integrity_check and foreign_key_check (--quick true: quick_check,
                      what the server runs at start). Prints "ok" or each problem found; exits 1
                      when the file is damaged or is not a Reprise database. It reads the whole
                      file: about as long as copying it.

--address defaults to 127.0.0.1:7233. Each --input is one argument, as JSON.
--request-id names a call: a start repeated with the same one returns the run
the first started ("started": false) instead of starting another, and a signal
repeated with the same one is recorded once. By default
each call has a fresh one. --id-reuse-policy says whether the id may start a
new run after its last run closed (default allow_duplicate).
Any --retry-* flag gives the workflow a retry policy (the others take the
server's defaults: 1 s initial interval, coefficient 2, at most 100 x the initial
interval, unlimited attempts): a run that fails or times out is retried as a new
run of the same id after the backoff, until one succeeds, the attempts run out,
the failure's type is listed, or the execution timeout would pass. `result` and
`execute` wait for the last run.
)";

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Flags after the command: --name value, --input may repeat.
class Flags {
 public:
  Flags(int argc, char** argv, int first) {
    for (int i = first; i < argc; ++i) {
      std::string name = argv[i];
      if (name.rfind("--", 0) != 0) throw UsageError("unexpected argument '" + name + "'");
      if (i + 1 >= argc) throw UsageError(name + " needs a value");
      values_[name.substr(2)].push_back(argv[++i]);
    }
  }
  std::string required(const std::string& name) {
    std::string v = optional(name);
    if (v.empty()) throw UsageError("--" + name + " is required");
    return v;
  }
  std::string optional(const std::string& name, const std::string& fallback = "") {
    used_.insert(name);
    auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second.back();
  }
  // A whole number in [min, max], or nothing when the flag is absent.
  std::optional<int64_t> integer(const std::string& name, int64_t min, int64_t max) {
    return parse<int64_t>(name, min, max, "a whole number");
  }
  // A number in [min, max] (a fraction allowed), or nothing when absent.
  std::optional<double> number(const std::string& name, double min, double max) {
    return parse<double>(name, min, max, "a number");
  }
  std::vector<std::string> all(const std::string& name) {
    used_.insert(name);
    auto it = values_.find(name);
    return it == values_.end() ? std::vector<std::string>{} : it->second;
  }
  // Every flag given must have been asked for by the command.
  void check_all_used() const {
    for (const auto& [name, v] : values_) {
      if (!used_.contains(name)) throw UsageError("unknown flag --" + name + " for this command");
    }
  }

 private:
  template <typename T>
  std::optional<T> parse(const std::string& name, T min, T max, const char* what) {
    const std::string text = optional(name);
    if (text.empty()) return std::nullopt;
    T value{};
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || !(value >= min && value <= max)) {
      std::ostringstream range;
      range << min << " to " << max;
      throw UsageError("--" + name + " must be " + what + " from " + range.str() + ", not '" + text + "'");
    }
    return value;
  }

  std::map<std::string, std::vector<std::string>> values_;
  std::set<std::string> used_;
};

// Longest wait or interval a flag may give, in seconds (about 31 years).
constexpr double kMaxSeconds = 1e9;

struct Context {
  std::shared_ptr<Connection> connection;
  bool json = false;
};

// A msgpack string need not be UTF-8; dump() would throw on it, so bytes that
// are not UTF-8 print as U+FFFD.
std::string json_text(const nlohmann::json& value, int indent = -1) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

void print_json(const nlohmann::json& value) { std::cout << json_text(value, 2) << "\n"; }

std::string proto_json(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, options);
  return out;
}

std::string status_name(v1::WorkflowExecutionStatus s) {
  std::string name = v1::WorkflowExecutionStatus_Name(s);
  const std::string prefix = "WORKFLOW_EXECUTION_STATUS_";
  if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

v1::Payloads inputs(Flags& flags) {
  v1::Payloads out;
  int i = 0;
  for (const std::string& text : flags.all("input")) {
    *out.add_payloads() = payload_from_json(text, "--input " + std::to_string(++i));
  }
  return out;
}

v1::Payloads resolved(Connection& connection, v1::Payloads payloads) {
  detail::Blobs blobs(connection, {.cache_bytes = 0});
  for (v1::Payload& p : *payloads.mutable_payloads()) p = blobs.resolve(p);
  return payloads;
}

nlohmann::json result_json(Connection& connection, const v1::Payloads& payloads) {
  const v1::Payloads values = resolved(connection, payloads);
  return values.payloads_size() == 1 ? payload_to_json(values.payloads(0)) : payloads_to_json(values);
}

int print_result(Context& ctx, const std::string& id, const std::string& run_id, Flags& flags) {
  std::optional<std::chrono::milliseconds> wait;
  if (std::optional<double> timeout = flags.number("timeout", 0, kMaxSeconds)) {
    wait = std::chrono::milliseconds(static_cast<int64_t>(*timeout * 1000));
  }
  try {
    const v1::Payloads payloads = wait_for_workflow_result(*ctx.connection, id, run_id, wait);
    const nlohmann::json value = result_json(*ctx.connection, payloads);
    if (ctx.json) {
      print_json({{"workflow_id", id}, {"status", "completed"}, {"result", value}});
    } else {
      std::cout << json_text(value) << "\n";
    }
    return 0;
  } catch (const WorkflowFailedError& e) {
    if (ctx.json) {
      print_json({{"workflow_id", id}, {"status", "failed"}, {"error", e.what()}, {"type", e.type()}});
    } else {
      std::cerr << e.what() << "\n";
    }
    return 1;
  }
}

// The --retry-* flags; none given, no policy (a failed run is not retried).
std::optional<v1::RetryPolicy> retry_policy(Flags& flags) {
  const std::optional<int64_t> attempts = flags.integer("retry-maximum-attempts", 0, INT32_MAX);
  const std::optional<double> initial = flags.number("retry-initial-interval", 0, kMaxSeconds);
  const std::optional<double> coefficient = flags.number("retry-backoff-coefficient", 0, 1e6);
  const std::optional<double> maximum = flags.number("retry-maximum-interval", 0, kMaxSeconds);
  const std::string types = flags.optional("retry-non-retryable-types");
  if (!attempts && !initial && !coefficient && !maximum && types.empty()) return std::nullopt;
  auto seconds = [](double s) { return std::chrono::nanoseconds(static_cast<int64_t>(s * 1e9)); };
  RetryPolicy policy;
  if (attempts) policy.maximum_attempts = static_cast<int32_t>(*attempts);
  if (initial) policy.initial_interval = seconds(*initial);
  if (coefficient) policy.backoff_coefficient = *coefficient;
  if (maximum) policy.maximum_interval = seconds(*maximum);
  for (size_t begin = 0; begin < types.size();) {
    const size_t comma = std::min(types.find(',', begin), types.size());
    if (comma > begin) policy.non_retryable_error_types.push_back(types.substr(begin, comma - begin));
    begin = comma + 1;
  }
  return policy.to_proto();
}

v1::StartWorkflowRequest start_request(Context& ctx, Flags& flags) {
  v1::StartWorkflowRequest r;
  r.set_workflow_id(flags.required("id"));
  r.mutable_workflow_type()->set_name(flags.required("type"));
  r.mutable_task_queue()->set_name(flags.required("task-queue"));
  *r.mutable_input() = inputs(flags);
  detail::Blobs(*ctx.connection, {.cache_bytes = 0}).offload(*r.mutable_input());
  if (std::optional<int64_t> timeout = flags.integer("execution-timeout", 1, static_cast<int64_t>(kMaxSeconds))) {
    r.mutable_workflow_execution_timeout()->set_seconds(*timeout);
  }
  r.set_request_id(flags.optional("request-id", detail::new_request_id()));
  if (std::optional<v1::RetryPolicy> retry = retry_policy(flags)) *r.mutable_retry_policy() = *retry;
  const std::string policy = flags.optional("id-reuse-policy");
  if (!policy.empty()) {
    std::string upper = "WORKFLOW_ID_REUSE_POLICY_";
    for (char c : policy) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    v1::WorkflowIdReusePolicy p;
    if (!v1::WorkflowIdReusePolicy_Parse(upper, &p) || p == v1::WORKFLOW_ID_REUSE_POLICY_UNSPECIFIED) {
      throw UsageError("unknown --id-reuse-policy '" + policy + "'");
    }
    r.set_workflow_id_reuse_policy(p);
  }
  r.set_identity("reprise-cli");
  return r;
}

int workflow_command(Context& ctx, const std::string& command, Flags& flags) {
  if (command == "start" || command == "execute") {
    const v1::StartWorkflowRequest request = start_request(ctx, flags);
    const std::string& id = request.workflow_id();
    if (command == "execute") flags.optional("timeout");
    flags.check_all_used();
    const v1::StartWorkflowResponse started = ctx.connection->start_workflow(request);
    if (command == "execute") return print_result(ctx, id, started.run_id(), flags);
    if (ctx.json) {
      print_json({{"workflow_id", id}, {"run_id", started.run_id()}, {"started", started.started()}});
    } else if (started.started()) {
      std::cout << "started " << id << " (run " << started.run_id() << ")\n";
    } else {
      std::cout << "already started " << id << " (run " << started.run_id() << ", same request id)\n";
    }
    return 0;
  }
  if (command == "list") {
    v1::ListWorkflowsRequest r;
    r.set_workflow_type(flags.optional("type"));
    r.mutable_task_queue()->assign(flags.optional("task-queue"));
    const std::string status = flags.optional("status");
    if (!status.empty()) {
      std::string upper = "WORKFLOW_EXECUTION_STATUS_";
      for (char c : status) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      v1::WorkflowExecutionStatus s;
      if (!v1::WorkflowExecutionStatus_Parse(upper, &s)) throw UsageError("unknown --status '" + status + "'");
      r.set_status(s);
    }
    r.set_page_size(static_cast<int32_t>(flags.integer("limit", 1, 10'000).value_or(100)));
    flags.check_all_used();
    const v1::ListWorkflowsResponse out = ctx.connection->list_workflows(r);
    if (ctx.json) {
      std::cout << proto_json(out);
      return 0;
    }
    std::printf("%-32s %-12s %-18s %s\n", "WORKFLOW ID", "STATUS", "TYPE", "RUN ID");
    for (const auto& e : out.executions()) {
      std::printf("%-32s %-12s %-18s %s\n", e.execution().workflow_id().c_str(), status_name(e.status()).c_str(),
                  e.type().name().c_str(), e.execution().run_id().c_str());
    }
    return 0;
  }
  const std::string id = flags.required("id");
  if (command == "result") {
    const std::string run_id = flags.optional("run-id");
    flags.optional("timeout");
    flags.check_all_used();
    return print_result(ctx, id, run_id, flags);
  }
  if (command == "describe") {
    const std::string run_id = flags.optional("run-id");
    flags.check_all_used();
    const v1::DescribeWorkflowResponse d = detail::describe(*ctx.connection, id, run_id);
    if (ctx.json) {
      std::cout << proto_json(d);
      return 0;
    }
    const auto& info = d.info();
    std::printf(
        "workflow   %s (run %s)\ntype       %s\nqueue      %s\nstatus     %s\nhistory    %lld events, %lld bytes\n",
        info.execution().workflow_id().c_str(), info.execution().run_id().c_str(), info.type().name().c_str(),
        info.task_queue().name().c_str(), status_name(info.status()).c_str(),
        static_cast<long long>(info.history_length()), static_cast<long long>(info.history_size_bytes()));
    for (const auto& a : d.pending_activities()) {
      std::printf("activity   '%s' id=%s attempt %d%s%s\n", a.activity_type().name().c_str(), a.activity_id().c_str(),
                  a.attempt(), a.started() ? " running" : " scheduled",
                  a.has_last_failure() ? (", last failure: " + a.last_failure().message()).c_str() : "");
    }
    for (const auto& t : d.pending_timers()) std::printf("timer      id=%s\n", t.timer_id().c_str());
    if (d.has_last_workflow_task_failure()) {
      std::printf("blocked    workflow task attempt %d failed: %s\n", d.workflow_task_attempt(),
                  d.last_workflow_task_failure().message().c_str());
    }
    return 0;
  }
  if (command == "show") {
    const std::string run_id = flags.optional("run-id");
    flags.check_all_used();
    const v1::History history = fetch_history(*ctx.connection, id, run_id);
    if (ctx.json) {
      std::cout << proto_json(history);
      return 0;
    }
    for (const auto& e : history.events()) std::cout << event_line(e) << "\n";
    return 0;
  }
  if (command == "signal") {
    v1::SignalWorkflowRequest r;
    r.mutable_workflow_execution()->set_workflow_id(id);
    r.set_signal_name(flags.required("name"));
    *r.mutable_input() = inputs(flags);
    r.set_request_id(flags.optional("request-id", detail::new_request_id()));
    flags.check_all_used();
    r.set_identity("reprise-cli");
    ctx.connection->signal_workflow(r);
    if (ctx.json) {
      print_json({{"workflow_id", id}, {"signaled", r.signal_name()}});
    } else {
      std::cout << "signaled " << id << " with '" << r.signal_name() << "'\n";
    }
    return 0;
  }
  if (command == "query") {
    v1::QueryWorkflowRequest r;
    r.mutable_workflow_execution()->set_workflow_id(id);
    r.set_query_type(flags.required("name"));
    flags.check_all_used();
    const v1::QueryWorkflowResponse out = ctx.connection->query_workflow(r);
    const nlohmann::json answer = result_json(*ctx.connection, out.result());
    if (ctx.json) {
      print_json({{"workflow_id", id}, {"query", r.query_type()}, {"answer", answer}});
    } else {
      std::cout << json_text(answer) << "\n";
    }
    return 0;
  }
  if (command == "delete") {
    v1::DeleteWorkflowExecutionRequest r;
    r.mutable_workflow_execution()->set_workflow_id(id);
    r.mutable_workflow_execution()->set_run_id(flags.optional("run-id"));
    r.set_identity("reprise-cli");
    flags.check_all_used();
    const v1::DeleteWorkflowExecutionResponse out = ctx.connection->delete_workflow(r);
    if (ctx.json) {
      print_json({{"workflow_id", id}, {"run_id", out.run_id()}, {"deleted", true}, {"terminated", out.terminated()}});
    } else {
      std::cout << (out.terminated() ? "terminated and deleted " : "deleted ") << id << " (run " << out.run_id()
                << ")\n";
    }
    return 0;
  }
  if (command == "cancel" || command == "terminate") {
    const std::string reason = flags.optional("reason");
    flags.check_all_used();
    if (command == "cancel") {
      detail::request_cancel(*ctx.connection, id, "", reason);
    } else {
      detail::terminate(*ctx.connection, id, "", reason);
    }
    if (ctx.json) {
      print_json({{"workflow_id", id}, {command == "cancel" ? "cancel_requested" : "terminated", true}});
    } else {
      std::cout << (command == "cancel" ? "asked " + id + " to cancel" : "terminated " + id) << "\n";
    }
    return 0;
  }
  throw UsageError("unknown command 'workflow " + command + "'");
}

int history_command(Context& ctx, const std::string& command, Flags& flags) {
  if (command != "export") throw UsageError("unknown command 'history " + command + "'");
  const std::string id = flags.required("id");
  const std::string path = flags.required("file");
  const std::string format = flags.optional("format", "json");
  if (format != "json" && format != "binary") throw UsageError("--format is json or binary, not '" + format + "'");
  const std::string run_id = flags.optional("run-id");
  flags.check_all_used();
  const v1::History history = fetch_history(*ctx.connection, id, run_id);
  write_history_file(path, history, format == "json" ? HistoryFormat::kJson : HistoryFormat::kBinary);
  if (ctx.json) {
    print_json({{"workflow_id", id}, {"file", path}, {"events", history.events_size()}});
  } else {
    std::cout << "wrote " << history.events_size() << " events of " << id << " to " << path << "\n";
  }
  return 0;
}

// Reads the file directly, read-only: works with or without a server, and
// beside a running one (WAL lets a reader see a consistent snapshot while it
// writes).
int admin_command(Context& ctx, const std::string& command, Flags& flags) {
  if (command != "check") throw UsageError("unknown command 'admin " + command + "'");
  const std::string path = flags.required("db");
  const std::string quick = flags.optional("quick", "false");
  if (quick != "true" && quick != "false") throw UsageError("--quick is true or false, not '" + quick + "'");
  flags.check_all_used();
  const bool full = quick == "false";
  const char* check = full ? "integrity_check" : "quick_check";
  Result<engine::DatabaseCheck> checked = engine::check_database_file(path, full);
  if (!checked) {
    if (ctx.json) {
      print_json({{"db", path}, {"ok", false}, {"error", checked.status().to_string()}});
    } else {
      std::cerr << "reprise: " << checked.status().to_string() << "\n";
    }
    return 1;
  }
  const engine::IntegrityReport& r = checked->integrity;
  const double seconds = std::chrono::duration<double>(r.elapsed).count();
  if (ctx.json) {
    print_json({{"db", path},
                {"ok", r.ok()},
                {"check", check},
                {"schema_version", checked->schema_version},
                {"pages", r.pages},
                {"seconds", seconds},
                {"problems", r.problems}});
  } else if (r.ok()) {
    std::printf("ok: database '%s' (schema version %d, %lld pages, %s in %.2f s)\n", path.c_str(),
                checked->schema_version, static_cast<long long>(r.pages), check, seconds);
  } else {
    std::printf("damaged: database '%s' (%s found %zu problem%s%s):\n", path.c_str(), check, r.problems.size(),
                r.problems.size() == 1 ? "" : "s", r.problems.size() >= 20 ? ", the first 20 shown" : "");
    for (const std::string& p : r.problems) std::printf("  %s\n", p.c_str());
  }
  return r.ok() ? 0 : 1;
}

int run(int argc, char** argv) {
  Context ctx;
  std::string address = "127.0.0.1:7233";
  int i = 1;
  for (; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (flag.rfind("--", 0) != 0) break;
    if (i + 1 >= argc) throw UsageError(flag + " needs a value");
    if (flag == "--address") {
      address = argv[i + 1];
    } else if (flag == "--output") {
      const std::string output = argv[i + 1];
      if (output != "text" && output != "json") throw UsageError("--output is text or json, not '" + output + "'");
      ctx.json = output == "json";
    } else {
      throw UsageError("unknown option " + flag);
    }
  }
  if (i + 1 >= argc) throw UsageError("a command is required");
  const std::string group = argv[i], command = argv[i + 1];
  Flags flags(argc, argv, i + 2);
  if (group == "admin") return admin_command(ctx, command, flags);
  ctx.connection = Connection::remote(address);
  if (group == "workflow") return workflow_command(ctx, command, flags);
  if (group == "history") return history_command(ctx, command, flags);
  throw UsageError("unknown command '" + group + "'");
}

}  // namespace
}  // namespace reprise::cli

int main(int argc, char** argv) {
  try {
    return reprise::cli::run(argc, argv);
  } catch (const reprise::cli::UsageError& e) {
    std::cerr << "reprise: " << e.what() << "\n\n" << reprise::cli::kUsage;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "reprise: " << e.what() << "\n";
    return 1;
  }
}
