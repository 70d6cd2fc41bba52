// The SDK's ConnectionOptions against a real server with API keys: a worker
// and a client, each with a key of its own role, run a workflow in their
// namespace; the environment fills the options; a key without the role is
// refused.
#include <gtest/gtest.h>

#include <cstdlib>

#include "../server/server_harness.hpp"
#include "engine/store/api_keys.hpp"
#include "engine/store/key_database.hpp"
#include "reprise/client.hpp"
#include "reprise/worker.hpp"

namespace reprise {
namespace {

Workflow<std::string> echo(WorkflowContext&, std::string text) { co_return text; }
inline constexpr WorkflowDef<&echo> echo_wf{"echo"};

std::string make_key(const std::string& db, const std::string& name, const std::string& role, const std::string& ns) {
  auto opened = engine::open_key_database(db);
  EXPECT_TRUE(opened.is_ok()) << opened.status().to_string();
  const std::string secret = engine::new_api_key_secret();
  engine::ApiKeyRecord key{name, engine::api_key_hash(secret), {ns}, {role}, SystemClock::instance().now(), {}};
  EXPECT_TRUE((*opened)->insert(key).is_ok());
  return secret;
}

ConnectionOptions as(const std::string& key, const std::string& ns) {
  ConnectionOptions options;
  options.api_key = key;
  options.namespace_name = ns;
  return options;
}

TEST(SdkApiKeys, AWorkerAndAClientWithKeysOfTheirRolesRunAWorkflowInTheirNamespace) {
  TempDir dir;
  const std::string admin = make_key(dir.file("db"), "ops", "admin", "*");
  const std::string worker_key = make_key(dir.file("db"), "worker", "worker", "orders");
  const std::string client_key = make_key(dir.file("db"), "frontend", "client", "orders");
  const std::string reader_key = make_key(dir.file("db"), "dashboard", "reader", "orders");
  Server server(dir.file("db"));
  v1::RegisterNamespaceRequest r;
  r.set_namespace_("orders");
  Connection::remote(server.address(), as(admin, ""))->register_namespace(r);

  auto worker_connection = Connection::remote(server.address(), as(worker_key, "orders"));
  Worker worker(worker_connection, {.task_queue = "keys", .workflow_threads = 1, .activity_threads = 1});
  worker.register_workflow(echo_wf);
  worker.start();
  Client client(Connection::remote(server.address(), as(client_key, "orders")));
  EXPECT_EQ(client.execute(echo_wf, {.id = "e", .task_queue = "keys"}, std::string("with keys")), "with keys");
  worker.stop();

  // It ran in "orders": the admin sees it there, not in default.
  v1::DescribeWorkflowRequest d;
  d.mutable_workflow_execution()->set_workflow_id("e");
  EXPECT_EQ(Connection::remote(server.address(), as(admin, "orders"))->describe_workflow(d).info().status(),
            v1::WORKFLOW_EXECUTION_STATUS_COMPLETED);
  try {
    Connection::remote(server.address(), as(admin, ""))->describe_workflow(d);
    ADD_FAILURE() << "found in default";
  } catch (const RpcError& e) {
    EXPECT_EQ(e.code(), static_cast<int>(grpc::StatusCode::NOT_FOUND)) << e.what();
  }
  try {
    Client(Connection::remote(server.address(), as(reader_key, "orders")))
        .start(echo_wf, {.id = "r", .task_queue = "keys"}, std::string("no"));
    ADD_FAILURE() << "a reader started a workflow";
  } catch (const RpcError& e) {
    EXPECT_EQ(e.code(), static_cast<int>(grpc::StatusCode::PERMISSION_DENIED)) << e.what();
  }
}

TEST(SdkApiKeys, TheEnvironmentGivesTheKeyAndTheNamespace) {
  ::setenv("REPRISE_API_KEY", "rpk_abc", 1);
  ::setenv("REPRISE_NAMESPACE", "orders", 1);
  const ConnectionOptions options = ConnectionOptions::from_environment();
  ::unsetenv("REPRISE_API_KEY");
  ::unsetenv("REPRISE_NAMESPACE");
  EXPECT_EQ(options.api_key, "rpk_abc");
  EXPECT_EQ(options.namespace_name, "orders");
  EXPECT_FALSE(options.tls.has_value());
}

}  // namespace
}  // namespace reprise
