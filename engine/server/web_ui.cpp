#include "engine/server/web_ui.hpp"

#include <google/protobuf/util/time_util.h>
#include <httplib.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <map>
#include <optional>
#include <sstream>

#include "engine/server/proto_json.hpp"
#include "engine/server/server_tls.hpp"
#include "engine/server/web_ui_assets.hpp"
#include "history/enum_name.hpp"
#include "history/payload_json.hpp"

namespace reprise::engine {

namespace {

using httplib::Request;
using httplib::Response;

// How long a handler waits for the engine's answer; a query's own timeout
// is shorter, so its answer (or DEADLINE_EXCEEDED) comes first.
constexpr auto kEngineWait = std::chrono::seconds(15);
constexpr int kQueryTimeoutSeconds = 10;
constexpr size_t kMaxRequestBytes = 1 << 20;

int http_status(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kAborted:
      return 409;
    case StatusCode::kResourceExhausted:
      return 429;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

void send_json(Response& response, const nlohmann::json& body, int status = 200) {
  response.status = status;
  // A string from a client need not be UTF-8: its bytes show as U+FFFD.
  response.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                       "application/json; charset=utf-8");
}

void send_error(Response& response, const Status& status) {
  send_json(response, {{"error", status.message()}, {"code", status_code_name(status.code())}},
            http_status(status.code()));
}

// Calls `start` with a reply and waits for it, at most kEngineWait.
template <typename T>
Result<T> await(const std::function<void(Reply<T>)>& start) {
  auto promise = std::make_shared<std::promise<Result<T>>>();
  std::future<Result<T>> answer = promise->get_future();
  start([promise](Result<T> r) { promise->set_value(std::move(r)); });
  if (answer.wait_for(kEngineWait) != std::future_status::ready) {
    return Status::deadline_exceeded("the server did not answer within " + std::to_string(kEngineWait.count()) + " s");
  }
  return answer.get();
}

// Lower-case hex digits as the bytes they spell; nothing for other text.
std::optional<std::string> bytes_from_hex(const std::string& hex) {
  if (hex.size() % 2 != 0 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) return std::nullopt;
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

// The host part of a Host header ("127.0.0.1:8080", "[::1]:80", "localhost").
std::string host_of(const std::string& header) {
  if (!header.empty() && header.front() == '[') return header.substr(0, header.find(']') + 1);
  return header.substr(0, header.find(':'));
}

bool loopback_name(const std::string& host) { return host == "localhost" || host == "[::1]" || is_loopback_host(host); }

// The engine's execution named by the request's id and run (run "": the
// current run).
Result<v1::WorkflowExecution> execution_of(const std::string& id, const std::string& run) {
  if (id.empty()) return Status::invalid_argument("a workflow id is required (id)");
  v1::WorkflowExecution e;
  e.set_workflow_id(id);
  e.set_run_id(run);
  return e;
}

Result<google::protobuf::Timestamp> parse_time(const std::string& name, const std::string& text) {
  google::protobuf::Timestamp t;
  if (!google::protobuf::util::TimeUtil::FromString(text, &t)) {
    return Status::invalid_argument(name + " must be an RFC 3339 time such as 2026-12-05T07:00:00Z, got '" + text +
                                    "'");
  }
  return t;
}

// The request's JSON body as an object.
Result<nlohmann::json> body_of(const Request& request) {
  Result<nlohmann::json> body = history::parse_json(request.body, "the request body");
  if (!body) return body.status();
  if (!body->is_object()) return Status::invalid_argument("the request body must be a JSON object");
  return body;
}

// body[name] as text; "" when absent.
Result<std::string> text_field(const nlohmann::json& body, const std::string& name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return std::string();
  if (!it->is_string()) return Status::invalid_argument("'" + name + "' must be a string");
  return it->get<std::string>();
}

// body["args"]: a JSON array, each element one payload.
Result<v1::Payloads> args_field(const nlohmann::json& body) {
  v1::Payloads out;
  auto it = body.find("args");
  if (it == body.end() || it->is_null()) return out;
  if (!it->is_array()) return Status::invalid_argument("'args' must be a JSON array, one element per argument");
  for (const nlohmann::json& value : *it) *out.add_payloads() = history::payload_from_value(value);
  return out;
}

// Every family's series added up, histograms by their _count and _sum: a
// summary for people, /metrics has the detail.
nlohmann::json metrics_summary(const metrics::Registry& registry) {
  std::map<std::string, double> totals;
  std::istringstream lines(registry.scrape());
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line.front() == '#') continue;
    const size_t name_end = line.find_first_of("{ ");
    const size_t space = line.rfind(' ');
    if (name_end == std::string::npos || space == std::string::npos) continue;
    const std::string name = line.substr(0, name_end);
    if (name.ends_with("_bucket")) continue;
    totals[name] += std::strtod(line.c_str() + space + 1, nullptr);
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : totals) out[name] = value;
  return out;
}

class WebUi {
 public:
  WebUi(Engine& engine, BlobStore& blobs, WebUiOptions options)
      : engine_(engine), blobs_(blobs), options_(std::move(options)) {}

  void install(httplib::Server& server) {
    for (const WebUiAsset& asset : web_ui_assets()) {
      const std::string path = asset.path == "/index.html" ? "/" : std::string(asset.path);
      server.Get(path, [asset](const Request&, Response& response) {
        response.set_content(std::string(asset.content), std::string(asset.content_type));
        response.set_header("Cache-Control", "no-cache");
      });
    }
    get(server, "/api/workflows", &WebUi::list);
    get(server, "/api/workflow", &WebUi::describe);
    get(server, "/api/history", &WebUi::history);
    get(server, "/api/server", &WebUi::server_state);
    server.Get("/api/blob", [this](const Request& request, Response& response) { blob(request, response); });
    post(server, "/api/signal", &WebUi::signal);
    post(server, "/api/query", &WebUi::query);
    post(server, "/api/cancel", &WebUi::cancel);
    post(server, "/api/terminate", &WebUi::terminate);
    // Before any route: a request for a foreign Host (DNS rebinding) or a
    // state change from a foreign page goes no further.
    server.set_pre_routing_handler([this](const Request& request, Response& response) {
      if (Status s = admit(request); !s) {
        send_error(response, s);
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    server.set_post_routing_handler([](const Request&, Response& response) {
      response.set_header("Content-Security-Policy",
                          "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                          "img-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'");
      response.set_header("X-Content-Type-Options", "nosniff");
      response.set_header("Referrer-Policy", "no-referrer");
    });
    server.set_error_handler([](const Request&, Response& response) {
      if (response.body.empty()) {
        send_json(response, {{"error", "no such page"}, {"code", "NOT_FOUND"}}, response.status);
      }
    });
  }

 private:
  Status admit(const Request& request) const {
    if (options_.loopback_hosts_only && !loopback_name(host_of(request.get_header_value("Host")))) {
      return Status::permission_denied("this UI answers only requests for a loopback host (localhost, 127.0.0.1)");
    }
    if (request.method == "GET" || request.method == "HEAD") return Status::ok();
    if (request.method != "POST") return Status::invalid_argument("only GET and POST are served");
    if (!request.get_header_value("Content-Type").starts_with("application/json") ||
        request.get_header_value("X-Reprise-UI") != "1") {
      return Status::permission_denied("a POST must be application/json with the header X-Reprise-UI: 1");
    }
    const std::string origin = request.get_header_value("Origin");
    if (!origin.empty() && origin != "http://" + request.get_header_value("Host")) {
      return Status::permission_denied("a POST from another origin (" + origin + ") is refused");
    }
    return Status::ok();
  }

  template <typename Fn>
  void get(httplib::Server& server, const std::string& path, Fn fn) {
    server.Get(path, [this, fn](const Request& request, Response& response) {
      Result<nlohmann::json> out = (this->*fn)(request);
      if (!out) return send_error(response, out.status());
      send_json(response, *out);
    });
  }
  template <typename Fn>
  void post(httplib::Server& server, const std::string& path, Fn fn) {
    server.Post(path, [this, fn](const Request& request, Response& response) {
      Result<nlohmann::json> body = body_of(request);
      if (!body) return send_error(response, body.status());
      Result<nlohmann::json> out = (this->*fn)(*body);
      if (!out) return send_error(response, out.status());
      send_json(response, *out);
    });
  }

  static std::string param(const Request& request, const char* name) {
    return request.has_param(name) ? request.get_param_value(name) : std::string();
  }

  Result<nlohmann::json> list(const Request& request) {
    v1::ListWorkflowsRequest list;
    list.set_namespace_(param(request, "namespace"));
    list.set_workflow_type(param(request, "type"));
    list.set_task_queue(param(request, "queue"));
    list.set_workflow_id_prefix(param(request, "id_prefix"));
    if (const std::string status = param(request, "status"); !status.empty()) {
      v1::WorkflowExecutionStatus value = v1::WORKFLOW_EXECUTION_STATUS_UNSPECIFIED;
      if (!v1::WorkflowExecutionStatus_Parse("WORKFLOW_EXECUTION_STATUS_" + status, &value)) {
        return Status::invalid_argument(
            "status must be RUNNING, COMPLETED, FAILED, CANCELED, TERMINATED, "
            "CONTINUED_AS_NEW or TIMED_OUT, got '" +
            status + "'");
      }
      list.set_status(value);
    }
    for (const char* name : {"started_after", "started_before"}) {
      const std::string text = param(request, name);
      if (text.empty()) continue;
      Result<google::protobuf::Timestamp> t = parse_time(name, text);
      if (!t) return t.status();
      *(std::string_view(name) == "started_after" ? list.mutable_started_after() : list.mutable_started_before()) = *t;
    }
    if (const std::string size = param(request, "page_size"); !size.empty()) {
      char* end = nullptr;
      const long n = std::strtol(size.c_str(), &end, 10);
      if (end == size.c_str() || *end != '\0' || n < 1 || n > 1000) {
        return Status::invalid_argument("page_size must be a number from 1 to 1000, got '" + size + "'");
      }
      list.set_page_size(static_cast<int32_t>(n));
    }
    list.set_next_page_token(param(request, "next_page_token"));
    Result<v1::ListWorkflowsResponse> page = await<v1::ListWorkflowsResponse>(
        [&](Reply<v1::ListWorkflowsResponse> reply) { engine_.list_workflows(list, std::move(reply)); });
    if (!page) return page.status();
    nlohmann::json out = {{"executions", nlohmann::json::array()}};
    for (const v1::WorkflowExecutionInfo& info : page->executions()) out["executions"].push_back(message_to_json(info));
    // The store's token is printable text; it goes back as it came.
    out["next_page_token"] = page->next_page_token();
    return out;
  }

  Result<nlohmann::json> describe(const Request& request) {
    v1::DescribeWorkflowRequest describe;
    describe.set_namespace_(param(request, "namespace"));
    Result<v1::WorkflowExecution> execution = execution_of(param(request, "id"), param(request, "run"));
    if (!execution) return execution.status();
    *describe.mutable_workflow_execution() = *execution;
    Result<v1::DescribeWorkflowResponse> described = await<v1::DescribeWorkflowResponse>(
        [&](Reply<v1::DescribeWorkflowResponse> reply) { engine_.describe_workflow(describe, std::move(reply)); });
    if (!described) return described.status();
    return message_to_json(*described);
  }

  Result<nlohmann::json> history(const Request& request) {
    v1::GetHistoryRequest get;
    get.set_namespace_(param(request, "namespace"));
    Result<v1::WorkflowExecution> execution = execution_of(param(request, "id"), param(request, "run"));
    if (!execution) return execution.status();
    *get.mutable_workflow_execution() = *execution;
    const std::optional<std::string> token = bytes_from_hex(param(request, "next_page_token"));
    if (!token) return Status::invalid_argument("next_page_token must be the hex text a history page gave");
    get.set_next_page_token(*token);
    Result<v1::GetHistoryResponse> page = await<v1::GetHistoryResponse>(
        [&](Reply<v1::GetHistoryResponse> reply) { engine_.get_history(get, std::move(reply)); });
    if (!page) return page.status();
    nlohmann::json out = {{"events", nlohmann::json::array()}};
    for (const v1::HistoryEvent& event : page->history().events()) out["events"].push_back(message_to_json(event));
    // History page tokens are bytes: hex here, back to bytes when they return.
    out["next_page_token"] = history::hex_digest(page->next_page_token());
    return out;
  }

  Result<nlohmann::json> server_state(const Request&) {
    nlohmann::json queues = nlohmann::json::array();
    for (const QueueLoad& load : engine_.queue_loads()) {
      queues.push_back({{"namespace", load.key.namespace_id},
                        {"queue", load.key.queue},
                        {"kind", load.key.kind == TaskKind::kWorkflowTask ? "workflow" : "activity"},
                        {"backlog", load.tasks},
                        {"pollers", load.parked_polls}});
    }
    nlohmann::json out = {{"queues", queues},
                          {"pending_requests", engine_.pending_requests()},
                          {"pending_queries", engine_.pending_queries()},
                          {"problem", engine_.server_problem()}};
    out["metrics"] = options_.registry ? metrics_summary(*options_.registry) : nlohmann::json(nullptr);
    return out;
  }

  void blob(const Request& request, Response& response) {
    history::Sha256Digest digest{};
    const std::string hex = param(request, "sha256");
    const std::optional<std::string> raw = bytes_from_hex(hex);
    if (!raw || !history::digest_from_bytes(*raw, digest)) {
      return send_error(response, Status::invalid_argument("sha256 must be 64 lower-case hex digits"));
    }
    std::string ns = param(request, "namespace");
    if (Status s = engine_.check_namespace(ns); !s) return send_error(response, s);
    Result<std::unique_ptr<BlobReader>> opened = blobs_.open(digest, ns);
    if (!opened) return send_error(response, opened.status());
    std::shared_ptr<BlobReader> reader = std::move(opened).value();
    response.set_header("Content-Disposition", "attachment; filename=\"" + hex + ".bin\"");
    // Streamed a chunk at a time: a large blob is never in memory whole.
    response.set_content_provider(static_cast<size_t>(reader->size()), "application/octet-stream",
                                  [reader](size_t, size_t, httplib::DataSink& sink) {
                                    Result<std::string> chunk = reader->next_chunk();
                                    if (!chunk || chunk->empty()) return false;
                                    return sink.write(chunk->data(), chunk->size());
                                  });
  }

  Result<nlohmann::json> signal(const nlohmann::json& body) {
    v1::SignalWorkflowRequest signal;
    REPRISE_RETURN_IF_ERROR(fill_target(body, signal));
    Result<std::string> name = text_field(body, "name");
    if (!name) return name.status();
    if (name->empty()) return Status::invalid_argument("a signal name is required (name)");
    signal.set_signal_name(*name);
    Result<v1::Payloads> args = args_field(body);
    if (!args) return args.status();
    *signal.mutable_input() = std::move(*args);
    signal.set_identity("web-ui");
    Result<v1::SignalWorkflowResponse> done = await<v1::SignalWorkflowResponse>(
        [&](Reply<v1::SignalWorkflowResponse> reply) { engine_.signal_workflow(signal, std::move(reply)); });
    if (!done) return done.status();
    return nlohmann::json{{"ok", true}};
  }

  Result<nlohmann::json> query(const nlohmann::json& body) {
    v1::QueryWorkflowRequest query;
    REPRISE_RETURN_IF_ERROR(fill_target(body, query));
    Result<std::string> name = text_field(body, "name");
    if (!name) return name.status();
    if (name->empty()) return Status::invalid_argument("a query name is required (name)");
    query.set_query_type(*name);
    Result<v1::Payloads> args = args_field(body);
    if (!args) return args.status();
    *query.mutable_args() = std::move(*args);
    query.mutable_timeout()->set_seconds(kQueryTimeoutSeconds);
    Result<v1::QueryWorkflowResponse> answered = await<v1::QueryWorkflowResponse>(
        [&](Reply<v1::QueryWorkflowResponse> reply) { engine_.query_workflow(query, std::move(reply)); });
    if (!answered) return answered.status();
    const v1::Payloads& result = answered->result();
    return nlohmann::json{{"result", result.payloads_size() == 1 ? history::payload_to_json(result.payloads(0))
                                                                 : history::payloads_to_json(result)}};
  }

  Result<nlohmann::json> cancel(const nlohmann::json& body) {
    v1::RequestCancelWorkflowRequest cancel;
    REPRISE_RETURN_IF_ERROR(fill_target(body, cancel));
    Result<std::string> reason = text_field(body, "reason");
    if (!reason) return reason.status();
    cancel.set_reason(*reason);
    cancel.set_identity("web-ui");
    Result<v1::RequestCancelWorkflowResponse> done =
        await<v1::RequestCancelWorkflowResponse>([&](Reply<v1::RequestCancelWorkflowResponse> reply) {
          engine_.request_cancel_workflow(cancel, std::move(reply));
        });
    if (!done) return done.status();
    return nlohmann::json{{"ok", true}};
  }

  Result<nlohmann::json> terminate(const nlohmann::json& body) {
    v1::TerminateWorkflowRequest terminate;
    REPRISE_RETURN_IF_ERROR(fill_target(body, terminate));
    Result<std::string> reason = text_field(body, "reason");
    if (!reason) return reason.status();
    terminate.set_reason(*reason);
    terminate.set_identity("web-ui");
    Result<v1::TerminateWorkflowResponse> done = await<v1::TerminateWorkflowResponse>(
        [&](Reply<v1::TerminateWorkflowResponse> reply) { engine_.terminate_workflow(terminate, std::move(reply)); });
    if (!done) return done.status();
    return nlohmann::json{{"ok", true}};
  }

  // The namespace and execution a POST names.
  template <typename Req>
  static Status fill_target(const nlohmann::json& body, Req& request) {
    Result<std::string> ns = text_field(body, "namespace");
    Result<std::string> id = text_field(body, "id");
    Result<std::string> run = text_field(body, "run");
    for (const Result<std::string>* r : {&ns, &id, &run}) {
      if (!*r) return r->status();
    }
    Result<v1::WorkflowExecution> execution = execution_of(*id, *run);
    if (!execution) return execution.status();
    request.set_namespace_(*ns);
    *request.mutable_workflow_execution() = *execution;
    return Status::ok();
  }

  Engine& engine_;
  BlobStore& blobs_;
  const WebUiOptions options_;
};

}  // namespace

HttpRoutes web_ui_routes(Engine& engine, BlobStore& blobs, WebUiOptions options) {
  auto ui = std::make_shared<WebUi>(engine, blobs, std::move(options));
  HttpRoutes routes;
  routes.install = [ui](httplib::Server& server) { ui->install(server); };
  routes.threads = 4;
  routes.max_request_bytes = kMaxRequestBytes;
  return routes;
}

}  // namespace reprise::engine
