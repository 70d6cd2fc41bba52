// reprise-server --ui-listen against a real server over loopback: the JSON
// API the pages call (list with filters and paging, describe, history with
// decoded payloads, claim-check downloads, signal, cancel, terminate, the
// server's state), what it refuses (a POST without the UI's header or from
// another origin, a foreign Host, bad JSON, an oversized body), the pages
// and their headers, the listener shared with --metrics-listen, and a
// non-loopback address refused without --insecure. The browser test
// (tests/ui/browser_test.py) drives the same pages in Chromium.
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "history/payload_json.hpp"
#include "server_harness.hpp"

namespace reprise {
namespace {

const httplib::Headers kUiHeaders = {{"X-Reprise-UI", "1"}};

httplib::Client client_of(const std::string& address) {
  httplib::Client client("http://" + address);
  client.set_connection_timeout(5);
  client.set_read_timeout(20);
  return client;
}

nlohmann::json json_of(const httplib::Result& r) {
  if (!r) return nullptr;
  return nlohmann::json::parse(r->body, nullptr, /*allow_exceptions=*/false);
}

v1::Payloads json_args(const nlohmann::json& values) {
  v1::Payloads out;
  for (const auto& v : values) *out.add_payloads() = history::payload_from_value(v);
  return out;
}

// Starts `id` (type `type`) with `input` (an array, one payload each) and runs it to completion: one
// activity, then a result.
void run_to_completion(Stub& stub, const std::string& id, const std::string& type, const nlohmann::json& input) {
  v1::StartWorkflowRequest start = start_request(id);
  start.mutable_workflow_type()->set_name(type);
  *start.mutable_input() = json_args(input);
  v1::StartWorkflowResponse started;
  ASSERT_TRUE(call(stub, &Stub::StartWorkflow, start, &started).ok());
  ASSERT_TRUE(complete(stub, next_workflow_task(stub).task_token(), {schedule("a")}).ok());
  v1::CompleteActivityRequest done;
  done.set_task_token(next_activity_task(stub).task_token());
  *done.mutable_result() = json_args(nlohmann::json::array({"greeted"}));
  v1::CompleteActivityResponse activity_completed;
  ASSERT_TRUE(call(stub, &Stub::CompleteActivity, done, &activity_completed).ok());
  v1::Command finish;
  finish.set_command_type(v1::COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION);
  *finish.mutable_complete_workflow_execution()->mutable_result() =
      json_args(nlohmann::json::array({nlohmann::json{{"hello", id}}}));
  ASSERT_TRUE(complete(stub, next_workflow_task(stub).task_token(), {finish}).ok());
}

void start_only(Stub& stub, const std::string& id) {
  v1::StartWorkflowResponse started;
  ASSERT_TRUE(call(stub, &Stub::StartWorkflow, start_request(id), &started).ok());
}

TEST(WebUi, ListsDescribesAndShowsTheHistoryOfARealServersWorkflows) {
  TempDir dir;
  Server server(dir.file("ui.db"), {"--ui-listen", "127.0.0.1:0"});
  ASSERT_FALSE(server.ui_address().empty()) << "no 'ui on' in the listening line";
  run_to_completion(server.stub(), "order-1", "checkout",
                    nlohmann::json::array({nlohmann::json{{"cents", 1250}, {"id", "o1"}}}));
  run_to_completion(server.stub(), "order-2", "checkout", nlohmann::json::array({"second"}));
  start_only(server.stub(), "refund-1");
  httplib::Client ui = client_of(server.ui_address());

  nlohmann::json all = json_of(ui.Get("/api/workflows"));
  ASSERT_EQ(all["executions"].size(), 3u) << all.dump();
  EXPECT_EQ(all["executions"][0]["execution"]["workflow_id"], "refund-1") << "newest first";
  EXPECT_EQ(all["executions"][0]["status"], "RUNNING");

  nlohmann::json checkouts = json_of(ui.Get("/api/workflows?type=checkout&status=COMPLETED&queue=q"));
  ASSERT_EQ(checkouts["executions"].size(), 2u) << checkouts.dump();
  EXPECT_EQ(checkouts["executions"][1]["type"]["name"], "checkout");
  EXPECT_EQ(json_of(ui.Get("/api/workflows?id_prefix=order-"))["executions"].size(), 2u);
  EXPECT_EQ(json_of(ui.Get("/api/workflows?status=RUNNING"))["executions"].size(), 1u);
  EXPECT_EQ(json_of(ui.Get("/api/workflows?started_after=2100-01-01T00:00:00Z"))["executions"].size(), 0u);

  // Paging: two, then the last one, then no token.
  nlohmann::json first = json_of(ui.Get("/api/workflows?page_size=2"));
  ASSERT_EQ(first["executions"].size(), 2u);
  const std::string token = first["next_page_token"];
  ASSERT_FALSE(token.empty());
  nlohmann::json second =
      json_of(ui.Get("/api/workflows", {{"page_size", "2"}, {"next_page_token", token}}, httplib::Headers{}));
  ASSERT_EQ(second["executions"].size(), 1u) << second.dump();
  EXPECT_EQ(second["executions"][0]["execution"]["workflow_id"], "order-1");
  EXPECT_EQ(second["next_page_token"], "");

  // Bad filters name what is wrong.
  httplib::Result bad_status = ui.Get("/api/workflows?status=DONE");
  ASSERT_TRUE(bad_status);
  EXPECT_EQ(bad_status->status, 400);
  EXPECT_NE(json_of(bad_status)["error"].get<std::string>().find("status must be RUNNING"), std::string::npos);
  EXPECT_EQ(ui.Get("/api/workflows?started_after=yesterday")->status, 400);
  EXPECT_EQ(ui.Get("/api/workflows?page_size=0")->status, 400);

  nlohmann::json described = json_of(ui.Get("/api/workflow?id=order-1"));
  EXPECT_EQ(described["info"]["status"], "COMPLETED") << described.dump();
  EXPECT_EQ(described["info"]["task_queue"]["name"], "q");
  EXPECT_EQ(ui.Get("/api/workflow?id=nobody")->status, 404);
  EXPECT_EQ(ui.Get("/api/workflow")->status, 400);

  nlohmann::json history = json_of(ui.Get("/api/history?id=order-1"));
  const nlohmann::json& events = history["events"];
  ASSERT_GE(events.size(), 8u) << history.dump();
  EXPECT_EQ(events[0]["event_type"], "WORKFLOW_EXECUTION_STARTED");
  // Payloads as their JSON values, not bytes.
  EXPECT_EQ(events[0]["workflow_execution_started"]["input"][0], (nlohmann::json{{"cents", 1250}, {"id", "o1"}}));
  EXPECT_EQ(events.back()["event_type"], "WORKFLOW_EXECUTION_COMPLETED");
  EXPECT_EQ(events.back()["workflow_execution_completed"]["result"][0]["hello"], "order-1");
  EXPECT_TRUE(events[0]["event_time"].get<std::string>().ends_with("Z"));
  EXPECT_EQ(history["next_page_token"], "");
  EXPECT_EQ(ui.Get("/api/history?id=order-1&next_page_token=zz")->status, 400);

  nlohmann::json state = json_of(ui.Get("/api/server"));
  ASSERT_EQ(state["queues"].size(), 1u) << state.dump();
  EXPECT_EQ(state["queues"][0]["queue"], "q");
  EXPECT_EQ(state["queues"][0]["backlog"], 1) << "refund-1's first workflow task waits";
  EXPECT_EQ(state["problem"], "");
  EXPECT_EQ(state["metrics"]["workflow_started_total"], 3) << state["metrics"].dump();
  EXPECT_EQ(server.terminate(), 0);
}

TEST(WebUi, SignalsCancelsAndTerminatesOnlyThroughTheUisOwnRequests) {
  TempDir dir;
  Server server(dir.file("ui.db"), {"--ui-listen", "127.0.0.1:0"});
  start_only(server.stub(), "w");
  const std::string address = server.ui_address();
  httplib::Client ui = client_of(address);
  const std::string terminate = R"({"id": "w", "reason": "test"})";

  // What a foreign page can send without a preflight, and what it cannot.
  EXPECT_EQ(ui.Post("/api/terminate", terminate, "text/plain")->status, 403);
  EXPECT_EQ(ui.Post("/api/terminate", terminate, "application/json")->status, 403) << "no X-Reprise-UI header";
  httplib::Headers foreign = kUiHeaders;
  foreign.emplace("Origin", "http://evil.example");
  EXPECT_EQ(ui.Post("/api/terminate", foreign, terminate, "application/json")->status, 403);
  EXPECT_EQ(ui.Options("/api/terminate")->status, 400) << "no CORS preflight is granted";
  EXPECT_EQ(describe(server.stub(), "w").info().status(), v1::WORKFLOW_EXECUTION_STATUS_RUNNING);

  // A foreign Host (DNS rebinding onto loopback) reads nothing.
  httplib::Headers rebound = {{"Host", "evil.example"}};
  EXPECT_EQ(ui.Get("/api/workflows", rebound)->status, 403);
  EXPECT_EQ(ui.Get("/", rebound)->status, 403);

  // Bad bodies are answered, naming the problem.
  httplib::Result not_json = ui.Post("/api/signal", kUiHeaders, "{nope", "application/json");
  EXPECT_EQ(not_json->status, 400);
  EXPECT_NE(json_of(not_json)["error"].get<std::string>().find("not valid JSON"), std::string::npos);
  EXPECT_EQ(ui.Post("/api/signal", kUiHeaders, "[1]", "application/json")->status, 400);
  EXPECT_EQ(
      ui.Post("/api/signal", kUiHeaders, R"({"id": "w", "name": "go", "args": {"a": 1}})", "application/json")->status,
      400);
  EXPECT_EQ(ui.Post("/api/signal", kUiHeaders, R"({"id": "w"})", "application/json")->status, 400) << "no name";
  EXPECT_EQ(ui.Post("/api/signal", kUiHeaders, R"({"id": 7, "name": "go"})", "application/json")->status, 400);
  EXPECT_EQ(ui.Post("/api/signal", kUiHeaders, R"({"id": "nobody", "name": "go"})", "application/json")->status, 404);
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(ui.Post("/api/signal", kUiHeaders, deep, "application/json")->status, 400);
  const std::string huge = R"({"id": "w", "name": "go", "args": [")" + std::string(2 << 20, 'x') + R"("]})";
  httplib::Result too_big = ui.Post("/api/signal", kUiHeaders, huge, "application/json");
  EXPECT_TRUE(!too_big || too_big->status == 413) << "a body past 1 MiB is refused";

  // The UI's own requests.
  httplib::Result signaled =
      ui.Post("/api/signal", kUiHeaders, R"({"id": "w", "name": "approve", "args": [{"by": "<b>ui</b>"}, 2]})",
              "application/json");
  ASSERT_EQ(signaled->status, 200) << signaled->body;
  httplib::Result canceled =
      ui.Post("/api/cancel", kUiHeaders, R"({"id": "w", "reason": "changed my mind"})", "application/json");
  ASSERT_EQ(canceled->status, 200) << canceled->body;
  httplib::Headers same_origin = kUiHeaders;
  same_origin.emplace("Origin", "http://" + address);
  ASSERT_EQ(ui.Post("/api/terminate", same_origin, terminate, "application/json")->status, 200);

  v1::GetHistoryResponse history = history_of(server.stub(), "w");
  EXPECT_EQ(count_events(history, v1::EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED), 1);
  EXPECT_EQ(count_events(history, v1::EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED), 1);
  EXPECT_EQ(describe(server.stub(), "w").info().status(), v1::WORKFLOW_EXECUTION_STATUS_TERMINATED);
  nlohmann::json events = json_of(ui.Get("/api/history?id=w"))["events"];
  bool seen = false;
  for (const auto& e : events) {
    if (e["event_type"] != "WORKFLOW_EXECUTION_SIGNALED") continue;
    seen = true;
    EXPECT_EQ(e["workflow_execution_signaled"]["input"], (nlohmann::json{{{"by", "<b>ui</b>"}}, 2}));
    EXPECT_EQ(e["workflow_execution_signaled"]["identity"], "web-ui");
  }
  EXPECT_TRUE(seen);
  EXPECT_EQ(ui.Post("/api/terminate", kUiHeaders, terminate, "application/json")->status, 409)
      << "a closed workflow cannot be terminated again";
  EXPECT_EQ(server.terminate(), 0);
}

TEST(WebUi, ServesItsPagesWithAPolicyAndDownloadsClaimCheckBlobs) {
  TempDir dir;
  Server server(dir.file("ui.db"), {"--ui-listen", "127.0.0.1:0"});
  httplib::Client ui = client_of(server.ui_address());
  httplib::Result page = ui.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->get_header_value("Content-Type").find("text/html"), std::string::npos);
  EXPECT_NE(page->get_header_value("Content-Security-Policy").find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(page->get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_NE(page->body.find("/app.js"), std::string::npos);
  httplib::Result script = ui.Get("/app.js");
  EXPECT_NE(script->get_header_value("Content-Type").find("text/javascript"), std::string::npos);
  EXPECT_NE(script->body.find("textContent"), std::string::npos);
  EXPECT_EQ(ui.Get("/style.css")->status, 200);
  EXPECT_EQ(ui.Get("/nothing-here")->status, 404);

  // A blob uploaded as a claim-check payload comes back whole, as a download.
  std::string bytes;
  for (int i = 0; i < 300000; ++i) bytes += static_cast<char>(i * 7 % 251);
  grpc::ClientContext context;
  v1::PutPayloadResponse uploaded;
  auto writer = server.stub().PutPayload(&context, &uploaded);
  v1::PutPayloadChunk chunk;
  chunk.set_data(bytes);
  ASSERT_TRUE(writer->Write(chunk));
  writer->WritesDone();
  ASSERT_TRUE(writer->Finish().ok());
  const std::string hex = history::hex_digest(uploaded.sha256());
  httplib::Result blob = ui.Get("/api/blob?sha256=" + hex);
  ASSERT_TRUE(blob);
  EXPECT_EQ(blob->status, 200);
  EXPECT_EQ(blob->body, bytes);
  EXPECT_EQ(blob->get_header_value("Content-Type"), "application/octet-stream");
  EXPECT_NE(blob->get_header_value("Content-Disposition").find("attachment"), std::string::npos);
  EXPECT_EQ(ui.Get("/api/blob?sha256=" + std::string(64, '0'))->status, 404);
  EXPECT_EQ(ui.Get("/api/blob?sha256=xyz")->status, 400);
  EXPECT_EQ(server.terminate(), 0);
}

TEST(WebUi, SharesOneListenerWithMetricsAndStaysOnLoopbackUnlessInsecure) {
  TempDir dir;
  {
    Server server(dir.file("shared.db"), {"--ui-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"});
    ASSERT_FALSE(server.ui_address().empty());
    EXPECT_EQ(server.ui_address(), server.metrics_address()) << "the same address: one listener";
    httplib::Client shared = client_of(server.ui_address());
    EXPECT_EQ(shared.Get("/")->status, 200);
    httplib::Result scrape = shared.Get("/metrics");
    EXPECT_EQ(scrape->status, 200);
    EXPECT_NE(scrape->body.find("service_requests_total"), std::string::npos);
    EXPECT_EQ(server.terminate(), 0);
  }
  // Beyond loopback the UI needs --insecure, and nothing is created without it.
  const char* binary = std::getenv("REPRISE_SERVER");
  ASSERT_NE(binary, nullptr);
  const std::string db = dir.file("refused.db");
  engine::testing::ChildProcess refused({binary, "--db", db, "--listen", "127.0.0.1:0", "--ui-listen", "0.0.0.0:0"},
                                        dir.file("refused.log"));
  std::string line;
  while (refused.read_line(line)) {
  }
  const int status = refused.wait();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
  std::ifstream log(dir.file("refused.log"));
  const std::string message((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(message.find("--ui-listen 0.0.0.0:0 is not a loopback address"), std::string::npos) << message;
  EXPECT_NE(message.find("--insecure"), std::string::npos) << message;
  EXPECT_FALSE(std::filesystem::exists(db)) << "refused before the database is opened";
}

}  // namespace
}  // namespace reprise
