// API keys against a real server: bearer tokens in metadata, each key's
// roles and namespaces, revocation while the server runs, the standard
// health and reflection services left open, and the refusal to serve beyond
// loopback with no keys.
#include "engine/store/api_keys.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "engine/store/key_database.hpp"
#include "health.grpc.pb.h"
#include "reflection.grpc.pb.h"
#include "server_harness.hpp"
#include "test_certificates.hpp"

namespace reprise {
namespace {

// Makes a key in the database at `db` (created if missing); its secret.
std::string make_key(const std::string& db, const std::string& name, std::vector<std::string> roles,
                     std::vector<std::string> namespaces) {
  auto opened = engine::open_key_database(db);
  EXPECT_TRUE(opened.is_ok()) << opened.status().to_string();
  const std::string secret = engine::new_api_key_secret();
  engine::ApiKeyRecord key;
  key.name = name;
  key.sha256 = engine::api_key_hash(secret);
  key.roles = std::move(roles);
  key.namespaces = std::move(namespaces);
  key.created_at = SystemClock::instance().now();
  EXPECT_TRUE((*opened)->insert(key).is_ok());
  return secret;
}

// One unary call carrying `key` ("" none).
template <typename Req, typename Resp>
grpc::Status call_as(const std::string& key, Stub& stub,
                     grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*), const Req& request,
                     Resp* response = nullptr) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  if (!key.empty()) context.AddMetadata("authorization", "Bearer " + key);
  Resp ignored;
  return (stub.*method)(&context, request, response != nullptr ? response : &ignored);
}

v1::ListWorkflowsRequest list_in(const std::string& ns) {
  v1::ListWorkflowsRequest r;
  r.set_namespace_(ns);
  return r;
}

struct Keys {
  std::string admin, reader_a, client_a, worker_a;
};

Keys make_keys(const std::string& db) {
  Keys k;
  k.admin = make_key(db, "ops", {"admin"}, {"*"});
  k.reader_a = make_key(db, "dashboard-a", {"reader"}, {"a"});
  k.client_a = make_key(db, "frontend-a", {"client"}, {"a"});
  k.worker_a = make_key(db, "worker-a", {"worker"}, {"a"});
  return k;
}

TEST(ApiKeys, ACallWithoutALiveKeyIsUnauthenticated) {
  TempDir dir;
  const Keys k = make_keys(dir.file("db"));
  Server server(dir.file("db"));
  grpc::Status s = call_as("", server.stub(), &Stub::ListWorkflows, list_in(""));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(s.error_message().find("requires an API key"), std::string::npos) << s.error_message();
  s = call_as("rpk_" + std::string(64, '0'), server.stub(), &Stub::ListWorkflows, list_in(""));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(s.error_message(), "the API key is not known to this server");
  grpc::ClientContext basic;
  basic.AddMetadata("authorization", "Basic " + k.admin);
  v1::ListWorkflowsResponse listed;
  s = server.stub().ListWorkflows(&basic, list_in(""), &listed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // A worker's call by token is refused before the token is looked at.
  v1::CompleteWorkflowTaskRequest forged;
  forged.set_task_token("not a token");
  s = call_as("", server.stub(), &Stub::CompleteWorkflowTask, forged);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(call_as(k.admin, server.stub(), &Stub::ListWorkflows, list_in("")).ok());
}

TEST(ApiKeys, AKeyOfNamespaceACannotReadBAndAReaderCannotStart) {
  TempDir dir;
  const Keys k = make_keys(dir.file("db"));
  Server server(dir.file("db"));
  Stub& stub = server.stub();
  for (const std::string ns : {"a", "b"}) {
    v1::RegisterNamespaceRequest r;
    r.set_namespace_(ns);
    grpc::Status s = call_as(k.client_a, stub, &Stub::RegisterNamespace, r);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << "only admin registers";
    EXPECT_NE(s.error_message().find("lacks the role admin that RegisterNamespace needs"), std::string::npos)
        << s.error_message();
    ASSERT_TRUE(call_as(k.admin, stub, &Stub::RegisterNamespace, r).ok());
  }
  v1::StartWorkflowRequest start_b = start_request("in-b");
  start_b.set_namespace_("b");
  ASSERT_TRUE(call_as(k.admin, stub, &Stub::StartWorkflow, start_b).ok());

  // The reader of a lists a, not b, and cannot start.
  v1::ListWorkflowsResponse listed;
  EXPECT_TRUE(call_as(k.reader_a, stub, &Stub::ListWorkflows, list_in("a"), &listed).ok());
  grpc::Status s = call_as(k.reader_a, stub, &Stub::ListWorkflows, list_in("b"), &listed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(), "API key 'dashboard-a' may not use namespace 'b' (ListWorkflows)");
  v1::DescribeWorkflowRequest d;
  d.set_namespace_("b");
  d.mutable_workflow_execution()->set_workflow_id("in-b");
  EXPECT_EQ(call_as(k.reader_a, stub, &Stub::DescribeWorkflow, d).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  v1::StartWorkflowRequest start_a = start_request("in-a");
  start_a.set_namespace_("a");
  s = call_as(k.reader_a, stub, &Stub::StartWorkflow, start_a);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(), "API key 'dashboard-a' lacks the role client or admin that StartWorkflow needs");

  // The client of a starts in a, not in b; the worker of a runs it.
  EXPECT_EQ(call_as(k.client_a, stub, &Stub::StartWorkflow, start_b).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  ASSERT_TRUE(call_as(k.client_a, stub, &Stub::StartWorkflow, start_a).ok());
  v1::PollWorkflowTaskRequest poll;
  poll.set_namespace_("b");
  poll.mutable_task_queue()->set_name("q");
  EXPECT_EQ(call_as(k.worker_a, stub, &Stub::PollWorkflowTask, poll).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(call_as(k.client_a, stub, &Stub::PollWorkflowTask, poll).error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << "a client does not poll";
  poll.set_namespace_("a");
  v1::PollWorkflowTaskResponse task;
  ASSERT_TRUE(call_as(k.worker_a, stub, &Stub::PollWorkflowTask, poll, &task).ok());
  ASSERT_FALSE(task.task_token().empty());
  v1::CompleteWorkflowTaskRequest done;
  done.set_task_token(task.task_token());
  *done.add_commands() = finish("ok");
  EXPECT_EQ(call_as(k.client_a, stub, &Stub::CompleteWorkflowTask, done).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(call_as(k.worker_a, stub, &Stub::CompleteWorkflowTask, done).ok());

  // A task token carries its namespace: the worker of a cannot complete b's task.
  poll.set_namespace_("b");
  v1::PollWorkflowTaskResponse task_of_b;
  ASSERT_TRUE(call_as(k.admin, stub, &Stub::PollWorkflowTask, poll, &task_of_b).ok());
  ASSERT_FALSE(task_of_b.task_token().empty());
  done.set_task_token(task_of_b.task_token());
  s = call_as(k.worker_a, stub, &Stub::CompleteWorkflowTask, done);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(), "API key 'worker-a' may not use namespace 'b' (CompleteWorkflowTask)");

  // ListNamespaces shows a key the namespaces it may use.
  v1::ListNamespacesResponse namespaces;
  ASSERT_TRUE(call_as(k.reader_a, stub, &Stub::ListNamespaces, v1::ListNamespacesRequest(), &namespaces).ok());
  ASSERT_EQ(namespaces.namespaces_size(), 1);
  EXPECT_EQ(namespaces.namespaces(0).name(), "a");
  ASSERT_TRUE(call_as(k.admin, stub, &Stub::ListNamespaces, v1::ListNamespacesRequest(), &namespaces).ok());
  EXPECT_EQ(namespaces.namespaces_size(), 3);
}

TEST(ApiKeys, AKeyRevokedWhileTheServerRunsIsRefusedWithinSeconds) {
  TempDir dir;
  const Keys k = make_keys(dir.file("db"));
  Server server(dir.file("db"));
  ASSERT_TRUE(call_as(k.reader_a, server.stub(), &Stub::ListWorkflows, list_in("a")).error_code() ==
              grpc::StatusCode::NOT_FOUND)
      << "a is not registered yet: authorized, then not found";
  {
    auto db = engine::open_key_database(dir.file("db"));
    ASSERT_TRUE(db.is_ok());
    ASSERT_TRUE((*db)->revoke("dashboard-a", SystemClock::instance().now()).is_ok());
  }
  grpc::Status s;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    s = call_as(k.reader_a, server.stub(), &Stub::ListWorkflows, list_in("a"));
  } while (s.error_code() != grpc::StatusCode::UNAUTHENTICATED && std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(s.error_message(), "API key 'dashboard-a' has been revoked");
  EXPECT_TRUE(call_as(k.admin, server.stub(), &Stub::ListWorkflows, list_in("")).ok()) << "the others still work";
}

TEST(ApiKeys, HealthAndReflectionStayOpen) {
  TempDir dir;
  make_keys(dir.file("db"));
  Server server(dir.file("db"));
  v1::HealthResponse health;
  EXPECT_TRUE(call_as("", server.stub(), &Stub::Health, v1::HealthRequest(), &health).ok());
  EXPECT_EQ(health.status(), "SERVING");

  auto channel = grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials());
  grpc::health::v1::HealthCheckRequest check;
  grpc::health::v1::HealthCheckResponse checked;
  grpc::ClientContext health_context;
  EXPECT_TRUE(grpc::health::v1::Health::NewStub(channel)->Check(&health_context, check, &checked).ok());
  EXPECT_EQ(checked.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  grpc::ClientContext reflection_context;
  auto stream =
      grpc::reflection::v1alpha::ServerReflection::NewStub(channel)->ServerReflectionInfo(&reflection_context);
  grpc::reflection::v1alpha::ServerReflectionRequest ask;
  ask.set_list_services("*");
  grpc::reflection::v1alpha::ServerReflectionResponse services;
  ASSERT_TRUE(stream->Write(ask));
  stream->WritesDone();
  ASSERT_TRUE(stream->Read(&services));
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_GT(services.list_services_response().service_size(), 0);
}

// Beyond loopback the server must know its callers: with TLS but no keys it
// refuses to start (naming how to make one, and --insecure); with a key it
// serves.
TEST(ApiKeys, BeyondLoopbackTheServerRefusesToServeWithNoKeys) {
  Certificates c;
  const std::vector<std::string> tls{"--tls-cert", c.path("server.pem"), "--tls-key",   c.path("server.key"),
                                     "--listen",   "0.0.0.0:0",          "--log-level", "off"};
  std::vector<std::string> argv{std::getenv("REPRISE_SERVER"), "--db", c.path("keys.db")};
  argv.insert(argv.end(), tls.begin(), tls.end());
  {
    ChildProcess refused(argv, c.path("refused.log"));
    const int status = refused.wait();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    std::ifstream in(c.path("refused.log"));
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    EXPECT_NE(text.find("with no API keys"), std::string::npos) << text;
    EXPECT_NE(text.find("reprise admin key create"), std::string::npos) << text;
    EXPECT_NE(text.find("--insecure"), std::string::npos) << text;
  }
  make_key(c.path("keys.db"), "ops", {"admin"}, {"*"});
  ChildProcess served(argv);
  std::string line;
  ASSERT_TRUE(served.read_line(line));
  EXPECT_NE(line.find("listening on 0.0.0.0:"), std::string::npos) << line;
}

}  // namespace
}  // namespace reprise
