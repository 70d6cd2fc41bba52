// Namespaces against a real server: the registry's RPCs, NOT_FOUND for a
// namespace never registered, nothing of one namespace visible from another
// (list, describe, history, signal, query, payloads, task polls), and
// retention by each namespace's own setting.
#include <gtest/gtest.h>

#include <thread>

#include "server_harness.hpp"

namespace reprise {
namespace {

grpc::Status register_namespace(Stub& stub, const std::string& name, std::optional<int64_t> retention_s = {},
                                v1::RegisterNamespaceResponse* out = nullptr) {
  v1::RegisterNamespaceRequest r;
  r.set_namespace_(name);
  r.set_description("for " + name);
  if (retention_s) r.mutable_retention()->set_seconds(*retention_s);
  v1::RegisterNamespaceResponse ignored;
  return call(stub, &Stub::RegisterNamespace, r, out != nullptr ? out : &ignored);
}

v1::StartWorkflowRequest start_in(const std::string& ns, const std::string& id) {
  v1::StartWorkflowRequest r = start_request(id);
  r.set_namespace_(ns);
  return r;
}

grpc::Status put_payload(Stub& stub, const std::string& ns, const std::string& bytes, std::string* sha256) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::PutPayloadResponse out;
  auto writer = stub.PutPayload(&context, &out);
  v1::PutPayloadChunk chunk;
  chunk.set_namespace_(ns);
  chunk.set_data(bytes);
  writer->Write(chunk);
  writer->WritesDone();
  grpc::Status s = writer->Finish();
  *sha256 = out.sha256();
  return s;
}

grpc::Status get_payload(Stub& stub, const std::string& ns, const std::string& sha256, std::string* bytes) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::GetPayloadRequest r;
  r.set_namespace_(ns);
  r.set_sha256(sha256);
  auto reader = stub.GetPayload(&context, r);
  v1::GetPayloadChunk chunk;
  bytes->clear();
  while (reader->Read(&chunk)) *bytes += chunk.data();
  return reader->Finish();
}

v1::PollWorkflowTaskResponse poll_in(Stub& stub, const std::string& ns, grpc::Status* status = nullptr) {
  v1::PollWorkflowTaskRequest r;
  r.set_namespace_(ns);
  r.mutable_task_queue()->set_name("q");
  v1::PollWorkflowTaskResponse out;
  grpc::Status s = call(stub, &Stub::PollWorkflowTask, r, &out);
  if (status != nullptr) *status = s;
  return out;
}

TEST(Namespaces, TheRegistryRegistersDescribesListsAndUpdatesAndOutlivesARestart) {
  TempDir dir;
  {
    Server server(dir.file("db"), {"--retention", "3d"});
    v1::RegisterNamespaceResponse created;
    ASSERT_TRUE(register_namespace(server.stub(), "payments", 3600, &created).ok());
    EXPECT_EQ(created.namespace_info().name(), "payments");
    EXPECT_EQ(created.namespace_info().retention().seconds(), 3600);
    EXPECT_EQ(created.namespace_info().effective_retention().seconds(), 3600);

    grpc::Status again = register_namespace(server.stub(), "payments");
    EXPECT_EQ(again.error_code(), grpc::StatusCode::ALREADY_EXISTS);
    EXPECT_EQ(again.error_message(), "namespace 'payments' exists already");
    grpc::Status bad = register_namespace(server.stub(), "no spaces");
    EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(bad.error_message().find("may hold only letters, digits"), std::string::npos) << bad.error_message();
    EXPECT_EQ(register_namespace(server.stub(), "*").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(register_namespace(server.stub(), "neg", -5).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

    v1::UpdateNamespaceRequest u;
    u.set_namespace_("payments");
    u.set_description("card payments");
    u.set_use_server_retention(true);
    v1::UpdateNamespaceResponse updated;
    ASSERT_TRUE(call(server.stub(), &Stub::UpdateNamespace, u, &updated).ok());
    EXPECT_FALSE(updated.namespace_info().has_retention());
    EXPECT_EQ(updated.namespace_info().effective_retention().seconds(), 3 * 86400) << "the server's --retention";
    u.set_namespace_("nope");
    EXPECT_EQ(call(server.stub(), &Stub::UpdateNamespace, u, &updated).error_code(), grpc::StatusCode::NOT_FOUND);
    server.terminate();
  }
  Server server(dir.file("db"));
  v1::ListNamespacesResponse listed;
  ASSERT_TRUE(call(server.stub(), &Stub::ListNamespaces, v1::ListNamespacesRequest(), &listed).ok());
  ASSERT_EQ(listed.namespaces_size(), 2);
  EXPECT_EQ(listed.namespaces(0).name(), "default");
  EXPECT_EQ(listed.namespaces(1).name(), "payments");
  EXPECT_EQ(listed.namespaces(1).description(), "card payments");
  v1::DescribeNamespaceRequest d;  // "" is default
  v1::DescribeNamespaceResponse described;
  ASSERT_TRUE(call(server.stub(), &Stub::DescribeNamespace, d, &described).ok());
  EXPECT_EQ(described.namespace_info().name(), "default");
}

TEST(Namespaces, EveryCallOnANamespaceNeverRegisteredIsNotFoundNamingIt) {
  TempDir dir;
  Server server(dir.file("db"));
  const std::string expected = "namespace 'nope' does not exist";
  v1::StartWorkflowResponse started;
  grpc::Status s = call(server.stub(), &Stub::StartWorkflow, start_in("nope", "w"), &started);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), expected);
  v1::ListWorkflowsRequest l;
  l.set_namespace_("nope");
  v1::ListWorkflowsResponse listed;
  s = call(server.stub(), &Stub::ListWorkflows, l, &listed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), expected);
  poll_in(server.stub(), "nope", &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), expected);
  std::string sha;
  s = put_payload(server.stub(), "nope", "bytes", &sha);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), expected);
  v1::DescribeNamespaceRequest d;
  d.set_namespace_("nope");
  v1::DescribeNamespaceResponse described;
  s = call(server.stub(), &Stub::DescribeNamespace, d, &described);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), expected);
}

TEST(Namespaces, NothingOfOneNamespaceIsVisibleFromAnother) {
  TempDir dir;
  Server server(dir.file("db"));
  Stub& stub = server.stub();
  ASSERT_TRUE(register_namespace(stub, "a").ok());
  ASSERT_TRUE(register_namespace(stub, "b").ok());

  std::string sha;
  ASSERT_TRUE(put_payload(stub, "a", "a's secret", &sha).ok());
  v1::StartWorkflowRequest start = start_in("a", "w");
  v1::Payload* input = start.mutable_input()->add_payloads();
  input->mutable_external()->set_sha256(sha);
  input->mutable_external()->set_size(10);
  v1::StartWorkflowResponse started;
  ASSERT_TRUE(call(stub, &Stub::StartWorkflow, start, &started).ok());

  // From b: no workflow, no history, no signal or query target, no blob,
  // no task; and a's blob cannot be referenced either.
  v1::ListWorkflowsRequest l;
  l.set_namespace_("b");
  v1::ListWorkflowsResponse listed;
  ASSERT_TRUE(call(stub, &Stub::ListWorkflows, l, &listed).ok());
  EXPECT_EQ(listed.executions_size(), 0);
  v1::DescribeWorkflowRequest d;
  d.set_namespace_("b");
  d.mutable_workflow_execution()->set_workflow_id("w");
  v1::DescribeWorkflowResponse described;
  EXPECT_EQ(call(stub, &Stub::DescribeWorkflow, d, &described).error_code(), grpc::StatusCode::NOT_FOUND);
  v1::GetHistoryRequest h;
  h.set_namespace_("b");
  h.mutable_workflow_execution()->set_workflow_id("w");
  v1::GetHistoryResponse history;
  EXPECT_EQ(call(stub, &Stub::GetHistory, h, &history).error_code(), grpc::StatusCode::NOT_FOUND);
  v1::SignalWorkflowRequest sig;
  sig.set_namespace_("b");
  sig.mutable_workflow_execution()->set_workflow_id("w");
  sig.set_signal_name("poke");
  v1::SignalWorkflowResponse signaled;
  EXPECT_EQ(call(stub, &Stub::SignalWorkflow, sig, &signaled).error_code(), grpc::StatusCode::NOT_FOUND);
  v1::QueryWorkflowRequest q;
  q.set_namespace_("b");
  q.mutable_workflow_execution()->set_workflow_id("w");
  q.set_query_type("state");
  v1::QueryWorkflowResponse queried;
  EXPECT_EQ(call(stub, &Stub::QueryWorkflow, q, &queried).error_code(), grpc::StatusCode::NOT_FOUND);
  std::string bytes;
  grpc::Status s = get_payload(stub, "b", sha, &bytes);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(s.error_message().find("namespace 'b'"), std::string::npos) << s.error_message();
  EXPECT_TRUE(bytes.empty());
  v1::StartWorkflowRequest steal = start;
  steal.set_namespace_("b");
  steal.set_request_id("steal");
  s = call(stub, &Stub::StartWorkflow, steal, &started);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << "a's blob referenced from b";
  EXPECT_NE(s.error_message().find("which namespace 'b' does not have"), std::string::npos) << s.error_message();
  grpc::Status polled;
  EXPECT_TRUE(poll_in(stub, "b", &polled).task_token().empty()) << "a's task was handed to a poller of b";
  EXPECT_TRUE(polled.ok());
  EXPECT_TRUE(poll_in(stub, "default").task_token().empty()) << "a's task was handed to a poller of default";

  // In a, all of it is there.
  EXPECT_TRUE(get_payload(stub, "a", sha, &bytes).ok());
  EXPECT_EQ(bytes, "a's secret");
  d.set_namespace_("a");
  ASSERT_TRUE(call(stub, &Stub::DescribeWorkflow, d, &described).ok());
  EXPECT_EQ(described.info().execution().run_id(), started.run_id());
  const v1::PollWorkflowTaskResponse task = poll_in(stub, "a");
  ASSERT_FALSE(task.task_token().empty());
  EXPECT_EQ(task.workflow_execution().workflow_id(), "w");
  EXPECT_TRUE(complete(stub, task.task_token(), {finish("done")}).ok());

  // The same workflow id in b is another workflow.
  ASSERT_TRUE(call(stub, &Stub::StartWorkflow, start_in("b", "w"), &started).ok());
  EXPECT_TRUE(started.started());
}

TEST(Namespaces, RetentionDeletesClosedRunsByEachNamespacesOwnSetting) {
  TempDir dir;
  // The server's default keeps runs forever; "short" keeps them a second.
  Server server(dir.file("db"), {"--retention", "0", "--retention-sweep-interval", "100ms"});
  Stub& stub = server.stub();
  ASSERT_TRUE(register_namespace(stub, "short", 1).ok());
  for (const std::string ns : {"short", "default"}) {
    v1::StartWorkflowResponse started;
    ASSERT_TRUE(call(stub, &Stub::StartWorkflow, start_in(ns, "w"), &started).ok());
    v1::TerminateWorkflowRequest t;
    t.set_namespace_(ns);
    t.mutable_workflow_execution()->set_workflow_id("w");
    v1::TerminateWorkflowResponse terminated;
    ASSERT_TRUE(call(stub, &Stub::TerminateWorkflow, t, &terminated).ok());
  }
  auto describe_in = [&stub](const std::string& ns) {
    v1::DescribeWorkflowRequest d;
    d.set_namespace_(ns);
    d.mutable_workflow_execution()->set_workflow_id("w");
    v1::DescribeWorkflowResponse out;
    return call(stub, &Stub::DescribeWorkflow, d, &out).error_code();
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (describe_in("short") != grpc::StatusCode::NOT_FOUND && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(describe_in("short"), grpc::StatusCode::NOT_FOUND) << "short's run outlived its 1 s retention";
  EXPECT_EQ(describe_in("default"), grpc::StatusCode::OK) << "default keeps runs forever here";
}

}  // namespace
}  // namespace reprise
