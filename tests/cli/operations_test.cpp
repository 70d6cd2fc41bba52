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

// --address with several nodes (docs/cluster.md, "Clients with several
// addresses"): a first address that refuses connections is passed over.
TEST(CliAddresses, ACallWhoseFirstAddressIsDeadGoesToTheNext) {
  TempDir dir;
  Server server(dir.file("addresses.db"));
  const std::string dead = "127.0.0.1:" + std::to_string(unused_loopback_port());
  Output started = cli(dead + "," + server.address(), "workflow start --type hello -t q -w past-the-dead-one");
  EXPECT_EQ(started.status, 0) << started.out;
  v1::DescribeWorkflowResponse d = describe(server.stub(), "past-the-dead-one");
  EXPECT_EQ(d.info().status(), v1::WORKFLOW_EXECUTION_STATUS_RUNNING);

  // No address reachable: it fails after one round, naming each address.
  const std::string also_dead = "127.0.0.1:" + std::to_string(unused_loopback_port());
  const auto asked = std::chrono::steady_clock::now();
  Output none = cli(dead + "," + also_dead, "workflow list");
  EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::seconds(10)) << "not the call's whole timeout";
  EXPECT_EQ(none.status, 1) << none.out;
  EXPECT_NE(none.out.find("reprise: ListWorkflows: no server address could take the call: " + dead + ": "),
            std::string::npos)
      << none.out;
  EXPECT_NE(none.out.find("; " + also_dead + ": "), std::string::npos) << none.out;
}

TEST(CliAddresses, AMalformedListIsRefusedNamingTheBadEntry) {
  struct Case {
    std::string list, says;
  };
  for (const Case& c : {
           Case{"127.0.0.1:7233,localhost", "entry 2 'localhost' has no port"},
           Case{"127.0.0.1:7233,,127.0.0.1:7234", "entry 2 is empty"},
           Case{"127.0.0.1:7233,", "entry 2 is empty"},
           Case{"a:7233,b:99999", "entry 2 'b:99999' has no port of 1 to 65535"},
           Case{"::1:7233,a:7233", "entry 1 '::1:7233' is an IPv6 address without brackets"},
           Case{"dns:///a:7233,b:7233", "entry 1 'dns:///a:7233' has a host that is not a name or an address"},
       }) {
    Output o = cli("'" + c.list + "'", "workflow list");
    EXPECT_EQ(o.status, 1) << c.list << ": " << o.out;
    EXPECT_NE(o.out.find("reprise: server address list '" + c.list + "': " + c.says), std::string::npos)
        << c.list << ": " << o.out;
  }
  // Spaces around entries and a bracketed IPv6 address are fine: the call
  // is made (and fails: nothing listens there).
  Output spaced = cli("'[::1]:1, 127.0.0.1:1'", "workflow list");
  EXPECT_EQ(spaced.out.find("server address list"), std::string::npos) << spaced.out;
}

}  // namespace
}  // namespace reprise
