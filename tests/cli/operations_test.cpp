// The operator's commands against a real server: `reprise admin backup`
// beside a server under load, restored by starting a server on the copy,
// and the CLI over TLS (--tls-* flags and REPRISE_TLS_* variables).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "../server/server_harness.hpp"
#include "../server/test_certificates.hpp"
#include "tests/cli/run_cli.hpp"

namespace reprise {
namespace {

TEST(AdminBackup, ACopyTakenUnderLoadHoldsEveryAcknowledgedWorkflowAndServes) {
  TempDir dir;
  const std::string db = dir.file("live.db"), copy = dir.file("copy.db");
  std::atomic<int> acknowledged{0};
  int before_backup = 0;
  {
    Server server(db);
    std::atomic<bool> stop{false};
    std::thread load([&] {
      for (int i = 0; !stop; ++i) {
        v1::StartWorkflowResponse started;
        if (call(server.stub(), &Stub::StartWorkflow, start_request("wf-" + std::to_string(i)), &started).ok()) {
          acknowledged = i + 1;
        }
      }
    });
    while (acknowledged < 20) std::this_thread::yield();
    before_backup = acknowledged;
    const Output backup = run_command(binary("REPRISE_CLI", "reprise") + " admin backup --db " + db + " --to " + copy);
    stop = true;
    load.join();
    ASSERT_EQ(backup.status, 0) << backup.out;
    EXPECT_NE(backup.out.find("copied database"), std::string::npos) << backup.out;
    EXPECT_GT(acknowledged.load(), before_backup) << "the server went on serving during the backup";

    const Output again = run_command(binary("REPRISE_CLI", "reprise") + " admin backup --db " + db + " --to " + copy);
    EXPECT_EQ(again.status, 1) << again.out;
    EXPECT_NE(again.out.find("exists"), std::string::npos) << again.out;
  }
  Server restored(copy);  // restoring is starting a server on the copy
  for (int i = 0; i < before_backup; ++i) {
    grpc::Status s;
    const auto d = describe(restored.stub(), "wf-" + std::to_string(i), &s);
    EXPECT_TRUE(s.ok()) << "wf-" << i << " was acknowledged before the backup began: " << s.error_message();
    EXPECT_EQ(d.info().status(), v1::WORKFLOW_EXECUTION_STATUS_RUNNING);
  }
  // Its workflows go on: the copy's tasks are there to poll.
  EXPECT_FALSE(next_workflow_task(restored.stub()).task_token().empty());
}

TEST(CliTls, TheCliConnectsOverTlsWithFlagsOrTheEnvironment) {
  Certificates c;
  Server server(c.path("tls.db"), {"--tls-cert", c.path("server.pem"), "--tls-key", c.path("server.key"),
                                   "--tls-client-ca", c.path("ca.pem")});
  const std::string client_files =
      " --tls-ca " + c.path("ca.pem") + " --tls-cert " + c.path("worker.pem") + " --tls-key " + c.path("worker.key");
  Output listed = cli(server.address(), "workflow list" + client_files);
  EXPECT_EQ(listed.status, 0) << listed.out;

  Output plaintext = cli(server.address(), "workflow list");
  EXPECT_EQ(plaintext.status, 1) << plaintext.out;
  EXPECT_NE(plaintext.out.find("reprise: ListWorkflows: "), std::string::npos) << "names the call: " << plaintext.out;

  const std::string environment = "REPRISE_TLS_CA=" + c.path("ca.pem") + " REPRISE_TLS_CERT=" + c.path("worker.pem") +
                                  " REPRISE_TLS_KEY=" + c.path("worker.key") + " ";
  Output from_environment =
      run_command(environment + binary("REPRISE_CLI", "reprise") + " --address " + server.address() + " workflow list");
  EXPECT_EQ(from_environment.status, 0) << from_environment.out;
}

}  // namespace
}  // namespace reprise
