// reprise: the command line for a running reprise-server.
//
//   reprise workflow start --type checkout -w order-7 -t orders --input '{"id":"o7","cents":1250}'
//   reprise workflow list -o json --status running --limit 500
//   reprise workflow show -w order-7 --follow
//   reprise admin check --db PATH
//   reprise admin backup --db PATH --to FILE
//   reprise --tls-ca ca.pem --address reprise.internal:7233 workflow list
//
// Flags are parsed with CLI11 (tools/command_line): --flag value and
// --flag=value, --address and --output anywhere on the line, durations as
// 90s, 1h30m, 7d, 250ms. Inputs and outputs are JSON, converted to and from
// the msgpack payloads workflows use. Exit status: 0 done, 1 the server or
// the workflow said no (or `admin check` found damage), 2 the command line is
// wrong.
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/store/api_keys.hpp"
#include "engine/store/backup.hpp"
#include "engine/store/file_check.hpp"
#include "engine/store/key_database.hpp"
#include "reprise/client.hpp"
#include "reprise/detail/proto_time.hpp"
#include "reprise/history_file.hpp"
#include "tools/cli/event_line.hpp"
#include "tools/cli/json_payload.hpp"
#include "tools/command_line/command_line.hpp"

namespace reprise::cli {
namespace {

using std::chrono::milliseconds;

constexpr const char* kFooter = R"(
--address and --output may stand anywhere on the line; each flag takes its value as --flag value or
--flag=value. Durations: 90s, 1h30m, 7d, 250ms, or a number of seconds (0.5).
Exit status: 0 done; 1 the server or the workflow said no (or `admin check` found damage); 2 the command
line is wrong (the message names the flag or word).)";

// Every flag of every command; a command reads the ones it declared.
struct Flags {
  std::string address = "127.0.0.1:7233";
  std::string output = "text";
  std::string id, run_id, type, task_queue, name, reason, request_id, id_reuse_policy;
  std::vector<std::string> inputs;
  std::optional<milliseconds> timeout, execution_timeout;
  // Retry policy: none given, none sent (a failed run is not retried).
  std::optional<int64_t> retry_maximum_attempts;
  std::optional<milliseconds> retry_initial_interval, retry_maximum_interval;
  std::optional<double> retry_backoff_coefficient;
  std::string retry_non_retryable_types;
  // list
  std::string status;
  int64_t limit = 100;
  int64_t page_size = kServerPageLimit;
  // show
  bool follow = false;
  // history export
  std::string file, format = "json";
  // admin check, admin backup
  std::string db, quick = "false", backup_to;
  bool overwrite = false;
  // TLS to the server (reprise/tls.hpp); none set: plaintext.
  std::string tls_ca, tls_cert, tls_key, tls_server_name;
  // Every call: the API key it carries, the namespace it names.
  std::string api_key, namespace_name;
  // namespace create|update
  std::string description;
  std::optional<milliseconds> retention;
  bool server_retention = false;
  // admin key create
  std::vector<std::string> roles, key_namespaces;

  // The most rows one ListWorkflows call returns (the server refuses more).
  static constexpr int64_t kServerPageLimit = 1000;
};

// The statuses `list --status` takes and every output prints: the enum's
// value names, short and lower case ("completed").
std::string status_name(v1::WorkflowExecutionStatus s) {
  std::string name = v1::WorkflowExecutionStatus_Name(s);
  const std::string prefix = "WORKFLOW_EXECUTION_STATUS_";
  if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::vector<std::string> status_names() {
  std::vector<std::string> names;
  const auto* type = v1::WorkflowExecutionStatus_descriptor();
  for (int i = 0; i < type->value_count(); ++i) {
    const auto s = static_cast<v1::WorkflowExecutionStatus>(type->value(i)->number());
    if (s != v1::WORKFLOW_EXECUTION_STATUS_UNSPECIFIED) names.push_back(status_name(s));
  }
  return names;
}

// A msgpack string need not be UTF-8; dump() would throw on it, so bytes that
// are not UTF-8 print as U+FFFD.
std::string json_text(const nlohmann::json& value, int indent = -1) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

void print_json(const nlohmann::json& value) { std::cout << json_text(value, 2) << "\n"; }

// A protobuf message as JSON, with statuses spelled as everywhere else in
// the output ("completed", not "WORKFLOW_EXECUTION_STATUS_COMPLETED").
nlohmann::json proto_json(const google::protobuf::Message& m) {
  std::string text;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &text, options);
  nlohmann::json value = nlohmann::json::parse(text);
  auto shorten = [](auto& self, nlohmann::json& node) -> void {
    if (node.is_array()) {
      for (auto& item : node) self(self, item);
    } else if (node.is_object()) {
      for (auto& [key, item] : node.items()) {
        v1::WorkflowExecutionStatus s;
        if (key == "status" && item.is_string() &&
            v1::WorkflowExecutionStatus_Parse(item.template get<std::string>(), &s)) {
          item = status_name(s);
        } else {
          self(self, item);
        }
      }
    }
  };
  shorten(shorten, value);
  return value;
}

v1::Payloads inputs(const Flags& flags) {
  v1::Payloads out;
  int i = 0;
  for (const std::string& text : flags.inputs) {
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

struct Context {
  std::shared_ptr<Connection> connection;
  bool json = false;
};

int print_result(Context& ctx, const std::string& id, const std::string& run_id, const Flags& flags) {
  try {
    const v1::Payloads payloads = wait_for_workflow_result(*ctx.connection, id, run_id, flags.timeout);
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

std::optional<v1::RetryPolicy> retry_policy(const Flags& flags) {
  if (!flags.retry_maximum_attempts && !flags.retry_initial_interval && !flags.retry_backoff_coefficient &&
      !flags.retry_maximum_interval && flags.retry_non_retryable_types.empty()) {
    return std::nullopt;
  }
  RetryPolicy policy;
  if (flags.retry_maximum_attempts) policy.maximum_attempts = static_cast<int32_t>(*flags.retry_maximum_attempts);
  if (flags.retry_initial_interval) policy.initial_interval = *flags.retry_initial_interval;
  if (flags.retry_backoff_coefficient) policy.backoff_coefficient = *flags.retry_backoff_coefficient;
  if (flags.retry_maximum_interval) policy.maximum_interval = *flags.retry_maximum_interval;
  const std::string& types = flags.retry_non_retryable_types;
  for (size_t begin = 0; begin < types.size();) {
    const size_t comma = std::min(types.find(',', begin), types.size());
    if (comma > begin) policy.non_retryable_error_types.push_back(types.substr(begin, comma - begin));
    begin = comma + 1;
  }
  return policy.to_proto();
}

// The proto enum value a lower-case flag value names ("reject_duplicate" is
// WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE). The flag's check already took
// only the enum's names, so the parse cannot fail.
template <typename Enum>
Enum enum_from_flag(const std::string& prefix, const std::string& value, bool (*parse)(const std::string&, Enum*)) {
  std::string name = prefix;
  for (char c : value) name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  Enum parsed{};
  (void)parse(name, &parsed);
  return parsed;
}

v1::StartWorkflowRequest start_request(Context& ctx, const Flags& flags) {
  v1::StartWorkflowRequest r;
  r.set_workflow_id(flags.id);
  r.mutable_workflow_type()->set_name(flags.type);
  r.mutable_task_queue()->set_name(flags.task_queue);
  *r.mutable_input() = inputs(flags);
  detail::Blobs(*ctx.connection, {.cache_bytes = 0}).offload(*r.mutable_input());
  if (flags.execution_timeout) {
    set_duration(r.mutable_workflow_execution_timeout(), *flags.execution_timeout);
  }
  r.set_request_id(flags.request_id.empty() ? detail::new_request_id() : flags.request_id);
  if (std::optional<v1::RetryPolicy> retry = retry_policy(flags)) *r.mutable_retry_policy() = *retry;
  if (!flags.id_reuse_policy.empty()) {
    r.set_workflow_id_reuse_policy(
        enum_from_flag("WORKFLOW_ID_REUSE_POLICY_", flags.id_reuse_policy, v1::WorkflowIdReusePolicy_Parse));
  }
  r.set_identity("reprise-cli");
  return r;
}

int start(Context& ctx, const Flags& flags, bool execute) {
  const v1::StartWorkflowRequest request = start_request(ctx, flags);
  const v1::StartWorkflowResponse started = ctx.connection->start_workflow(request);
  if (execute) return print_result(ctx, flags.id, started.run_id(), flags);
  if (ctx.json) {
    print_json({{"workflow_id", flags.id}, {"run_id", started.run_id()}, {"started", started.started()}});
  } else if (started.started()) {
    std::cout << "started " << flags.id << " (run " << started.run_id() << ")\n";
  } else {
    std::cout << "already started " << flags.id << " (run " << started.run_id() << ", same request id)\n";
  }
  return 0;
}

// Up to --limit rows, in as many calls as that takes (the server gives at
// most kServerPageLimit a call).
int list(Context& ctx, const Flags& flags) {
  v1::ListWorkflowsRequest r;
  r.set_workflow_type(flags.type);
  r.set_task_queue(flags.task_queue);
  if (!flags.status.empty()) {
    r.set_status(enum_from_flag("WORKFLOW_EXECUTION_STATUS_", flags.status, v1::WorkflowExecutionStatus_Parse));
  }
  v1::ListWorkflowsResponse all;
  do {
    const int64_t left = flags.limit - all.executions_size();
    r.set_page_size(static_cast<int32_t>(std::min(left, flags.page_size)));
    v1::ListWorkflowsResponse page = ctx.connection->list_workflows(r);
    for (auto& e : *page.mutable_executions()) *all.add_executions() = std::move(e);
    r.set_next_page_token(page.next_page_token());
  } while (!r.next_page_token().empty() && all.executions_size() < flags.limit);
  if (ctx.json) {
    print_json(proto_json(all));
    return 0;
  }
  std::printf("%-32s %-12s %-18s %s\n", "WORKFLOW ID", "STATUS", "TYPE", "RUN ID");
  for (const auto& e : all.executions()) {
    std::printf("%-32s %-12s %-18s %s\n", e.execution().workflow_id().c_str(), status_name(e.status()).c_str(),
                e.type().name().c_str(), e.execution().run_id().c_str());
  }
  return 0;
}

int describe(Context& ctx, const Flags& flags) {
  const v1::DescribeWorkflowResponse d = detail::describe(*ctx.connection, flags.id, flags.run_id);
  if (ctx.json) {
    print_json(proto_json(d));
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

// Whether `e` is the last event of its run.
bool closes_run(const v1::HistoryEvent& e) {
  switch (e.attributes_case()) {
    case v1::HistoryEvent::kWorkflowExecutionCompleted:
    case v1::HistoryEvent::kWorkflowExecutionFailed:
    case v1::HistoryEvent::kWorkflowExecutionTimedOut:
    case v1::HistoryEvent::kWorkflowExecutionCanceled:
    case v1::HistoryEvent::kWorkflowExecutionTerminated:
    case v1::HistoryEvent::kWorkflowExecutionContinuedAsNew:
      return true;
    default:
      return false;
  }
}

// --follow: the events as they arrive (text lines, or one JSON object a
// line), until the run closes. Each call waits on the server (GetHistory's
// wait_new_event) for events past the last one printed.
int follow(Context& ctx, const Flags& flags) {
  // Pinned to one run: the id's current run may change while this follows.
  const std::string run_id =
      flags.run_id.empty() ? detail::describe(*ctx.connection, flags.id, "").info().execution().run_id() : flags.run_id;
  v1::GetHistoryRequest r;
  r.mutable_workflow_execution()->set_workflow_id(flags.id);
  r.mutable_workflow_execution()->set_run_id(run_id);
  r.set_first_event_id(1);
  r.set_wait_new_event(true);
  r.mutable_wait_timeout()->set_seconds(30);
  while (true) {
    const v1::GetHistoryResponse page = ctx.connection->get_history(r, std::chrono::seconds(40));
    for (const v1::HistoryEvent& e : page.history().events()) {
      if (ctx.json) {
        std::cout << json_text(proto_json(e)) << "\n";
      } else {
        std::cout << event_line(e) << "\n";
      }
      std::cout.flush();
      r.set_first_event_id(e.event_id() + 1);
      if (closes_run(e)) return 0;
    }
    r.set_next_page_token(page.next_page_token());
  }
}

int show(Context& ctx, const Flags& flags) {
  if (flags.follow) return follow(ctx, flags);
  const v1::History history = fetch_history(*ctx.connection, flags.id, flags.run_id);
  if (ctx.json) {
    print_json(proto_json(history));
    return 0;
  }
  for (const auto& e : history.events()) std::cout << event_line(e) << "\n";
  return 0;
}

int send_signal(Context& ctx, const Flags& flags) {
  v1::SignalWorkflowRequest r;
  r.mutable_workflow_execution()->set_workflow_id(flags.id);
  r.set_signal_name(flags.name);
  *r.mutable_input() = inputs(flags);
  r.set_request_id(flags.request_id.empty() ? detail::new_request_id() : flags.request_id);
  r.set_identity("reprise-cli");
  ctx.connection->signal_workflow(r);
  if (ctx.json) {
    print_json({{"workflow_id", flags.id}, {"signaled", r.signal_name()}});
  } else {
    std::cout << "signaled " << flags.id << " with '" << r.signal_name() << "'\n";
  }
  return 0;
}

int query(Context& ctx, const Flags& flags) {
  v1::QueryWorkflowRequest r;
  r.mutable_workflow_execution()->set_workflow_id(flags.id);
  r.set_query_type(flags.name);
  const v1::QueryWorkflowResponse out = ctx.connection->query_workflow(r);
  const nlohmann::json answer = result_json(*ctx.connection, out.result());
  if (ctx.json) {
    print_json({{"workflow_id", flags.id}, {"query", r.query_type()}, {"answer", answer}});
  } else {
    std::cout << json_text(answer) << "\n";
  }
  return 0;
}

int delete_run(Context& ctx, const Flags& flags) {
  v1::DeleteWorkflowExecutionRequest r;
  r.mutable_workflow_execution()->set_workflow_id(flags.id);
  r.mutable_workflow_execution()->set_run_id(flags.run_id);
  r.set_identity("reprise-cli");
  const v1::DeleteWorkflowExecutionResponse out = ctx.connection->delete_workflow(r);
  if (ctx.json) {
    print_json(
        {{"workflow_id", flags.id}, {"run_id", out.run_id()}, {"deleted", true}, {"terminated", out.terminated()}});
  } else {
    std::cout << (out.terminated() ? "terminated and deleted " : "deleted ") << flags.id << " (run " << out.run_id()
              << ")\n";
  }
  return 0;
}

int cancel_or_terminate(Context& ctx, const Flags& flags, bool terminate) {
  if (terminate) {
    detail::terminate(*ctx.connection, flags.id, "", flags.reason);
  } else {
    detail::request_cancel(*ctx.connection, flags.id, "", flags.reason);
  }
  if (ctx.json) {
    print_json({{"workflow_id", flags.id}, {terminate ? "terminated" : "cancel_requested", true}});
  } else {
    std::cout << (terminate ? "terminated " + flags.id : "asked " + flags.id + " to cancel") << "\n";
  }
  return 0;
}

int export_history(Context& ctx, const Flags& flags) {
  const v1::History history = fetch_history(*ctx.connection, flags.id, flags.run_id);
  write_history_file(flags.file, history, flags.format == "json" ? HistoryFormat::kJson : HistoryFormat::kBinary);
  if (ctx.json) {
    print_json({{"workflow_id", flags.id}, {"file", flags.file}, {"events", history.events_size()}});
  } else {
    std::cout << "wrote " << history.events_size() << " events of " << flags.id << " to " << flags.file << "\n";
  }
  return 0;
}

// Reads the file directly, read-only: works with or without a server, and
// beside a running one (WAL lets a reader see a consistent snapshot while it
// writes).
int admin_check(Context& ctx, const Flags& flags) {
  const std::string& path = flags.db;
  const bool full = flags.quick == "false";
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

int admin_backup(Context& ctx, const Flags& flags) {
  Result<engine::BackupReport> copied = engine::backup_database(flags.db, flags.backup_to, flags.overwrite);
  if (!copied) {
    if (ctx.json) {
      print_json({{"db", flags.db}, {"to", flags.backup_to}, {"ok", false}, {"error", copied.status().to_string()}});
    } else {
      std::cerr << "reprise: " << copied.status().to_string() << "\n";
    }
    return 1;
  }
  const double seconds = std::chrono::duration<double>(copied->elapsed).count();
  if (ctx.json) {
    print_json({{"db", flags.db},
                {"to", flags.backup_to},
                {"ok", true},
                {"schema_version", copied->schema_version},
                {"pages", copied->pages},
                {"bytes", copied->bytes},
                {"seconds", seconds}});
  } else {
    std::printf("copied database '%s' to '%s' (%lld pages, %lld bytes, checked, in %.2f s)\n", flags.db.c_str(),
                flags.backup_to.c_str(), static_cast<long long>(copied->pages), static_cast<long long>(copied->bytes),
                seconds);
  }
  return 0;
}

nlohmann::json namespace_json(const v1::NamespaceInfo& info) {
  nlohmann::json out = proto_json(info);
  if (!info.has_retention()) out["retention"] = "server default";
  return out;
}

// "30d", "90s", or "forever" for 0.
std::string retention_text(const google::protobuf::Duration& retention) {
  const int64_t seconds = retention.seconds();
  if (seconds == 0) return "forever";
  return seconds % 86400 == 0 ? std::to_string(seconds / 86400) + "d" : std::to_string(seconds) + "s";
}

void print_namespace(const v1::NamespaceInfo& info) {
  std::printf("namespace   %s\ndescription %s\nretention   %s%s\n", info.name().c_str(), info.description().c_str(),
              retention_text(info.effective_retention()).c_str(),
              info.has_retention() ? "" : " (the server's default)");
}

int namespace_create(Context& ctx, const Flags& flags) {
  v1::RegisterNamespaceRequest r;
  r.set_namespace_(flags.name);
  r.set_description(flags.description);
  if (flags.retention) set_duration(r.mutable_retention(), *flags.retention);
  const v1::RegisterNamespaceResponse created = ctx.connection->register_namespace(r);
  if (ctx.json) {
    print_json(namespace_json(created.namespace_info()));
  } else {
    print_namespace(created.namespace_info());
  }
  return 0;
}

int namespace_describe(Context& ctx, const Flags& flags) {
  v1::DescribeNamespaceRequest r;
  r.set_namespace_(flags.name);
  const v1::DescribeNamespaceResponse d = ctx.connection->describe_namespace(r);
  if (ctx.json) {
    print_json(namespace_json(d.namespace_info()));
  } else {
    print_namespace(d.namespace_info());
  }
  return 0;
}

int namespace_list(Context& ctx, const Flags&) {
  const v1::ListNamespacesResponse listed = ctx.connection->list_namespaces({});
  if (ctx.json) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& info : listed.namespaces()) all.push_back(namespace_json(info));
    print_json(all);
    return 0;
  }
  std::printf("%-24s %-14s %s\n", "NAMESPACE", "RETENTION", "DESCRIPTION");
  for (const auto& info : listed.namespaces()) {
    const std::string retention =
        retention_text(info.effective_retention()) + (info.has_retention() ? "" : " (server)");
    std::printf("%-24s %-14s %s\n", info.name().c_str(), retention.c_str(), info.description().c_str());
  }
  return 0;
}

int namespace_update(Context& ctx, const Flags& flags) {
  v1::UpdateNamespaceRequest r;
  r.set_namespace_(flags.name);
  if (!flags.description.empty()) r.set_description(flags.description);
  if (flags.retention) set_duration(r.mutable_retention(), *flags.retention);
  r.set_use_server_retention(flags.server_retention);
  const v1::UpdateNamespaceResponse updated = ctx.connection->update_namespace(r);
  if (ctx.json) {
    print_json(namespace_json(updated.namespace_info()));
  } else {
    print_namespace(updated.namespace_info());
  }
  return 0;
}

// `admin key` works on the server's database (key_database.hpp), as `admin
// backup` does on a file: the first key is made before the server requires
// one, and a secret never crosses the network. A running server sees the
// change within a second.
int fail_with(Context& ctx, const Status& s) {
  if (ctx.json) {
    print_json({{"ok", false}, {"error", s.to_string()}});
  } else {
    std::cerr << "reprise: " << s.to_string() << "\n";
  }
  return 1;
}

std::string time_text(TimePoint t) {
  const std::time_t seconds = static_cast<std::time_t>(to_unix_nanos(t) / 1'000'000'000);
  char text[32];
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

int admin_key_create(Context& ctx, const Flags& flags) {
  if (Status s = engine::validate_key_name(flags.name); !s) return fail_with(ctx, s);
  if (Status s = engine::validate_roles(flags.roles); !s) return fail_with(ctx, s);
  if (Status s = engine::validate_key_namespaces(flags.key_namespaces); !s) return fail_with(ctx, s);
  Result<std::unique_ptr<engine::KeyDatabase>> db = engine::open_key_database(flags.db);
  if (!db) return fail_with(ctx, db.status());
  const std::string secret = engine::new_api_key_secret();
  engine::ApiKeyRecord key;
  key.name = flags.name;
  key.sha256 = engine::api_key_hash(secret);
  key.namespaces = flags.key_namespaces;
  key.roles = flags.roles;
  key.created_at = SystemClock::instance().now();
  if (Status s = (*db)->insert(key); !s) return fail_with(ctx, s);
  if (ctx.json) {
    print_json(
        {{"ok", true}, {"name", key.name}, {"key", secret}, {"roles", key.roles}, {"namespaces", key.namespaces}});
  } else {
    std::printf("%s\n", secret.c_str());
    std::fflush(stdout);  // the secret first, whatever the two streams are joined into
    std::fprintf(stderr,
                 "created API key '%s' (roles %s; namespaces %s). It is shown only now: the database keeps its "
                 "hash. Clients send it as REPRISE_API_KEY or --api-key\n",
                 key.name.c_str(), joined(key.roles).c_str(), joined(key.namespaces).c_str());
  }
  return 0;
}

int admin_key_revoke(Context& ctx, const Flags& flags) {
  Result<std::unique_ptr<engine::KeyDatabase>> db = engine::open_key_database(flags.db);
  if (!db) return fail_with(ctx, db.status());
  if (Status s = (*db)->revoke(flags.name, SystemClock::instance().now()); !s) return fail_with(ctx, s);
  if (ctx.json) {
    print_json({{"ok", true}, {"name", flags.name}, {"revoked", true}});
  } else {
    std::printf("revoked API key '%s' (a running server refuses it within a second)\n", flags.name.c_str());
  }
  return 0;
}

int admin_key_list(Context& ctx, const Flags& flags) {
  Result<std::unique_ptr<engine::KeyDatabase>> db = engine::open_key_database(flags.db);
  if (!db) return fail_with(ctx, db.status());
  Result<std::vector<engine::ApiKeyRecord>> keys = (*db)->keys();
  if (!keys) return fail_with(ctx, keys.status());
  if (ctx.json) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& k : *keys) {
      all.push_back({{"name", k.name},
                     {"roles", k.roles},
                     {"namespaces", k.namespaces},
                     {"created", time_text(k.created_at)},
                     {"revoked", k.revoked_at ? nlohmann::json(time_text(*k.revoked_at)) : nlohmann::json(nullptr)}});
    }
    print_json(all);
    return 0;
  }
  std::printf("%-20s %-24s %-24s %-21s %s\n", "NAME", "ROLES", "NAMESPACES", "CREATED", "REVOKED");
  for (const auto& k : *keys) {
    std::printf("%-20s %-24s %-24s %-21s %s\n", k.name.c_str(), joined(k.roles).c_str(), joined(k.namespaces).c_str(),
                time_text(k.created_at).c_str(), k.revoked_at ? time_text(*k.revoked_at).c_str() : "-");
  }
  return 0;
}

// The command line: every command's flags, declared once, and what each
// command runs once parsed.
class CommandLine {
 public:
  CommandLine() : app_("The command line for a running reprise-server.", "reprise") {
    command_line::set_up(app_);
    app_.footer(kFooter);
    // Subcommands made after this hand flags they do not know to their
    // parent: --address and --output work anywhere on the line.
    app_.fallthrough();
    app_.add_option("--address", flags_.address,
                    "The server; or several nodes of a cluster, separated by commas (a,b,c): a call a node cannot "
                    "take goes to the next")
        ->type_name("HOST:PORT[,...]")
        ->capture_default_str();
    app_.add_option("--tls-ca", flags_.tls_ca,
                    "Connect over TLS, trusting the server's certificate if this PEM CA "
                    "bundle signed it")
        ->type_name("FILE")
        ->envname("REPRISE_TLS_CA");
    app_.add_option("--tls-cert", flags_.tls_cert, "A PEM client certificate, for a server that requires one")
        ->type_name("FILE")
        ->envname("REPRISE_TLS_CERT");
    app_.add_option("--tls-key", flags_.tls_key, "The private key of --tls-cert")
        ->type_name("FILE")
        ->envname("REPRISE_TLS_KEY");
    app_.add_option("--tls-server-name", flags_.tls_server_name,
                    "The name the server's certificate must carry, when it differs from --address's host")
        ->envname("REPRISE_TLS_SERVER_NAME");
    app_.add_option("--api-key", flags_.api_key,
                    "The API key every call carries, for a server that has keys (reprise admin key create)")
        ->type_name("KEY")
        ->envname("REPRISE_API_KEY");
    app_.add_option("-n,--namespace", flags_.namespace_name,
                    "The namespace the workflow commands act in (default: the server's 'default')")
        ->type_name("NAME")
        ->envname("REPRISE_NAMESPACE");
    app_.add_option("-o,--output", flags_.output, "How results print")
        ->check(CLI::IsMember({"text", "json"}).description(""))
        ->type_name("text|json")
        ->capture_default_str();
    add_workflow_commands();
    add_namespace_commands();
    add_history_commands();
    add_admin_commands();
  }

  // The exit code (see kFooter).
  int run(int argc, char** argv) {
    if (std::optional<int> exit_code = command_line::parse(app_, argc, argv)) return *exit_code;
    Context ctx;
    ctx.json = flags_.output == "json";
    for (const auto& [command, action] : actions_) {
      if (!command->parsed()) continue;
      if (file_commands_.count(command) == 0) ctx.connection = connect();
      return action(ctx);
    }
    // A group without its command ("reprise workflow"); a word that names
    // no command is refused by the parse, as an unexpected argument.
    std::cerr << "reprise: a command is required\n\n" << app_.help() << std::flush;
    return 2;
  }

 private:
  CLI::App* command(CLI::App& group, const std::string& name, const std::string& description,
                    std::function<int(Context&)> action) {
    CLI::App* sub = group.add_subcommand(name, description);
    actions_.emplace_back(sub, std::move(action));
    return sub;
  }

  void id(CLI::App* c) { c->add_option("-w,--id,--workflow-id", flags_.id, "The workflow id")->required(); }
  void run_id(CLI::App* c, const std::string& description = "The run (default: the id's current run)") {
    c->add_option("-r,--run-id", flags_.run_id, description);
  }
  void input(CLI::App* c) {
    c->add_option("-i,--input", flags_.inputs, "An argument, as JSON; repeat for more")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->allow_extra_args(false)
        ->type_name("JSON");
  }
  void request_id(CLI::App* c) {
    c->add_option("--request-id", flags_.request_id,
                  "Names the call: repeated with the same one, a start returns the run the first started "
                  "(\"started\": false) and a signal is recorded once (default: a fresh one each call)");
  }
  template <typename T>
  void duration(CLI::App* c, const std::string& name, T& into, const std::string& description) {
    command_line::add_duration_flag(
        *c, name, [&into](milliseconds d) { into = d; }, description);
  }

  void add_workflow_commands() {
    CLI::App* workflow = app_.add_subcommand("workflow", "Start, watch and steer workflows");
    for (const bool execute : {false, true}) {
      CLI::App* c =
          command(*workflow, execute ? "execute" : "start",
                  execute ? "Start a workflow, wait for it to close and print its result" : "Start a workflow",
                  [this, execute](Context& ctx) { return start(ctx, flags_, execute); });
      c->add_option("--type", flags_.type, "The workflow type")->required();
      id(c);
      c->add_option("-t,--task-queue", flags_.task_queue, "The task queue its workers poll")->required();
      input(c);
      duration(c, "--execution-timeout", flags_.execution_timeout,
               "The longest the workflow may run, retries included (default: no limit)");
      request_id(c);
      c->add_option("--id-reuse-policy", flags_.id_reuse_policy,
                    "Whether the id may start a new run after its last run closed (default allow_duplicate)")
          ->check(CLI::IsMember({"allow_duplicate", "allow_duplicate_failed_only", "reject_duplicate"}));
      c->add_option("--retry-maximum-attempts", flags_.retry_maximum_attempts,
                    "Any --retry-* flag gives the workflow a retry policy: a run that fails or times out is retried "
                    "as a new run of the same id after the backoff (the others take the server's defaults: 1s "
                    "initial interval, coefficient 2, at most 100 x the initial interval, unlimited attempts)")
          ->check(command_line::whole_number(0, INT32_MAX))
          ->type_name("N");
      duration(c, "--retry-initial-interval", flags_.retry_initial_interval, "The first backoff");
      c->add_option("--retry-backoff-coefficient", flags_.retry_backoff_coefficient,
                    "Each backoff is the last times this")
          ->check(CLI::Range(0.0, 1e6).description(""))
          ->type_name("X");
      duration(c, "--retry-maximum-interval", flags_.retry_maximum_interval, "The longest backoff");
      c->add_option("--retry-non-retryable-types", flags_.retry_non_retryable_types,
                    "Failure types that are not retried")
          ->type_name("TYPE,TYPE...");
      if (execute) duration(c, "--timeout", flags_.timeout, "How long to wait for the result (default: forever)");
    }
    CLI::App* c = command(*workflow, "result", "Wait for a workflow to close and print its result (the last run's)",
                          [this](Context& ctx) { return print_result(ctx, flags_.id, flags_.run_id, flags_); });
    id(c);
    run_id(c);
    duration(c, "--timeout", flags_.timeout, "How long to wait (default: forever)");

    c = command(*workflow, "describe", "A run's status, pending activities and timers",
                [this](Context& ctx) { return describe(ctx, flags_); });
    id(c);
    run_id(c);

    c = command(*workflow, "show", "The history, one line per event",
                [this](Context& ctx) { return show(ctx, flags_); });
    id(c);
    run_id(c);
    c->add_flag("-f,--follow", flags_.follow, "Print events as they arrive until the run closes");

    c = command(*workflow, "list", "Workflows, newest first", [this](Context& ctx) { return list(ctx, flags_); });
    c->add_option("--type", flags_.type, "Only this workflow type");
    c->add_option("-t,--task-queue", flags_.task_queue, "Only this task queue");
    c->add_option("--status", flags_.status, "Only runs with this status")
        ->check(CLI::IsMember(status_names()).description(""))
        ->type_name("running|completed|failed|canceled|terminated|timed_out|continued_as_new");
    c->add_option("--limit", flags_.limit, "At most this many rows; more than a server page takes several calls")
        ->check(command_line::whole_number(1))
        ->type_name("N")
        ->capture_default_str();
    c->add_option("--page-size", flags_.page_size, "Rows asked of the server per call")
        ->check(command_line::whole_number(1, Flags::kServerPageLimit))
        ->type_name("N")
        ->capture_default_str();

    c = command(*workflow, "signal", "Send a signal", [this](Context& ctx) { return send_signal(ctx, flags_); });
    id(c);
    c->add_option("--name", flags_.name, "The signal")->required();
    input(c);
    request_id(c);

    c = command(*workflow, "query", "Ask a running workflow a query",
                [this](Context& ctx) { return query(ctx, flags_); });
    id(c);
    c->add_option("--name", flags_.name, "The query")->required();

    for (const bool terminate : {false, true}) {
      c = command(*workflow, terminate ? "terminate" : "cancel",
                  terminate ? "End a workflow now" : "Ask a workflow to cancel (it may clean up first)",
                  [this, terminate](Context& ctx) { return cancel_or_terminate(ctx, flags_, terminate); });
      id(c);
      c->add_option("--reason", flags_.reason, "Recorded in the history");
    }

    c = command(*workflow, "delete",
                "Delete a run now: its history, visibility row, tasks, timers and blob references; a running run is "
                "terminated first. Deleting the current run frees the id for a new start. The server deletes closed "
                "runs by itself after its retention period (reprise-server --retention, default 7d)",
                [this](Context& ctx) { return delete_run(ctx, flags_); });
    id(c);
    run_id(c, "The run (default: the id's current run)");
  }

  void add_namespace_commands() {
    CLI::App* group = app_.add_subcommand(
        "namespace", "Register, show and change namespaces (each holds its own workflows, tasks and blobs)");
    auto name = [this](CLI::App* c) { c->add_option("--name", flags_.name, "The namespace")->required(); };
    auto retention = [this](CLI::App* c) {
      duration(c, "--retention", flags_.retention,
               "How long a closed run is kept before it is deleted; 0 keeps runs forever (default: the server's "
               "--retention)");
    };
    CLI::App* c = command(*group, "create", "Register a namespace",
                          [this](Context& ctx) { return namespace_create(ctx, flags_); });
    name(c);
    c->add_option("--description", flags_.description, "What it is for");
    retention(c);
    c = command(*group, "describe", "A namespace's description and retention",
                [this](Context& ctx) { return namespace_describe(ctx, flags_); });
    name(c);
    command(*group, "list", "Every namespace (that the API key may use)",
            [this](Context& ctx) { return namespace_list(ctx, flags_); });
    c = command(*group, "update", "Change a namespace's description or retention",
                [this](Context& ctx) { return namespace_update(ctx, flags_); });
    name(c);
    c->add_option("--description", flags_.description, "What it is for");
    retention(c);
    c->add_flag("--server-retention", flags_.server_retention, "Go back to the server's --retention")
        ->excludes("--retention");
  }

  void add_history_commands() {
    CLI::App* history = app_.add_subcommand("history", "Histories as files, for the replay tester");
    CLI::App* c = command(*history, "export", "Write a run's history to a file",
                          [this](Context& ctx) { return export_history(ctx, flags_); });
    id(c);
    run_id(c);
    c->add_option("--file", flags_.file, "Where to write")->required()->type_name("PATH");
    c->add_option("--format", flags_.format, "The file's format")
        ->check(CLI::IsMember({"json", "binary"}).description(""))
        ->type_name("json|binary")
        ->capture_default_str();
  }

  void add_admin_commands() {
    CLI::App* admin = app_.add_subcommand("admin", "The database file itself");
    CLI::App* check = command(
        *admin, "check",
        "Check the database file, read-only (no server needed, and safe while one runs): that it is a Reprise "
        "database, then SQLite's full PRAGMA integrity_check and foreign_key_check. Prints \"ok\" or each problem "
        "found; exits 1 when the file is damaged or is not a Reprise database. It reads the whole file: about as "
        "long as copying it",
        [this](Context& ctx) { return admin_check(ctx, flags_); });
    check->add_option("--db", flags_.db, "The database file")->required()->type_name("PATH");
    check
        ->add_option("--quick", flags_.quick,
                     "true: quick_check, what the server runs at start, instead of the full check")
        ->check(CLI::IsMember({"true", "false"}).description(""))
        ->type_name("true|false");
    CLI::App* backup = command(
        *admin, "backup",
        "Copy the database to FILE while the server runs (SQLite's online backup: the copy is one commit's state and "
        "holds everything acknowledged before it began). Run it on the server's host; restoring is starting a "
        "server on the copy (docs/operations.md, \"Backup and restore\")",
        [this](Context& ctx) { return admin_backup(ctx, flags_); });
    backup->add_option("--db", flags_.db, "The database file")->required()->type_name("PATH");
    backup->add_option("--to", flags_.backup_to, "Where the copy goes")->required()->type_name("FILE");
    backup->add_flag("--overwrite", flags_.overwrite, "Replace FILE if it exists");
    file_commands_ = {check, backup};

    CLI::App* key = admin->add_subcommand(
        "key",
        "API keys, on the server's database (a SQLite file on the server's host, or a PostgreSQL URL; a running "
        "server sees the change within a second). Once any key exists the server requires one on every call "
        "(docs/operations.md, \"Authentication\")");
    auto db = [this](CLI::App* c) {
      c->add_option("--db", flags_.db,
                    "The database: a SQLite file (created if missing) or a postgresql:// URL of a database a "
                    "server has created")
          ->required()
          ->type_name("PATH|URL");
    };
    CLI::App* c = command(*key, "create",
                          "Make a key and print its secret, once: the database keeps only its SHA-256. Roles: "
                          "worker (poll and complete tasks), client (start, signal, query, cancel, terminate), "
                          "reader (describe, history, list), admin (everything, namespaces included)",
                          [this](Context& ctx) { return admin_key_create(ctx, flags_); });
    db(c);
    c->add_option("--name", flags_.name, "What to call the key (list, revoke)")->required();
    c->add_option("--role", flags_.roles, "A role it holds; repeat for more")
        ->required()
        ->check(CLI::IsMember({"worker", "client", "reader", "admin"}).description(""))
        ->type_name("worker|client|reader|admin");
    c->add_option("--namespace", flags_.key_namespaces, "A namespace it may use, or '*' for all; repeat for more")
        ->required()
        ->type_name("NAME");
    file_commands_.insert(c);
    c = command(*key, "revoke", "Refuse a key from now on (it stays listed, as revoked)",
                [this](Context& ctx) { return admin_key_revoke(ctx, flags_); });
    db(c);
    c->add_option("--name", flags_.name, "The key")->required();
    file_commands_.insert(c);
    c = command(*key, "list", "Every key: name, roles, namespaces, when made and revoked (never the secret)",
                [this](Context& ctx) { return admin_key_list(ctx, flags_); });
    db(c);
    file_commands_.insert(c);
  }

  std::shared_ptr<Connection> connect() const {
    ConnectionOptions options;
    if (!flags_.tls_ca.empty() || !flags_.tls_cert.empty() || !flags_.tls_key.empty() ||
        !flags_.tls_server_name.empty()) {
      options.tls = TlsOptions::from_files(flags_.tls_ca, flags_.tls_cert, flags_.tls_key, flags_.tls_server_name);
    }
    options.api_key = flags_.api_key;
    options.namespace_name = flags_.namespace_name;
    return Connection::remote(flags_.address, options);
  }

  Flags flags_;
  CLI::App app_;
  std::vector<std::pair<CLI::App*, std::function<int(Context&)>>> actions_;
  // The commands that work on the database file and need no server.
  std::set<const CLI::App*> file_commands_;
};

}  // namespace
}  // namespace reprise::cli

int main(int argc, char** argv) {
  try {
    return reprise::cli::CommandLine().run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "reprise: " << e.what() << "\n";
    return 1;
  }
}
