// `reprise namespace ...`, `reprise admin key ...` and the CLI's --api-key,
// REPRISE_API_KEY and --namespace against a real server and database file.
#include <gtest/gtest.h>

#include <thread>

#include "../server/server_harness.hpp"
#include "../store/test_postgres.hpp"
#include "tests/cli/run_cli.hpp"

namespace reprise {
namespace {

std::string reprise_cli() { return binary("REPRISE_CLI", "reprise"); }

// The key `admin key create` printed: its first line (stdout), the secret alone.
std::string secret_of(const Output& created) { return created.out.substr(0, created.out.find('\n')); }

TEST(CliNamespaces, CreateDescribeListUpdateAndWorkflowsInANamespace) {
  TempDir dir;
  Server server(dir.file("db"));
  Output o = cli(server.address(), "namespace create --name payments --description 'card payments' --retention 30d");
  ASSERT_EQ(o.status, 0) << o.out;
  EXPECT_NE(o.out.find("namespace   payments"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("retention   30d"), std::string::npos) << o.out;
  o = cli(server.address(), "namespace create --name payments");
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_NE(o.out.find("namespace 'payments' exists already"), std::string::npos) << o.out;
  o = cli(server.address(), "namespace update --name payments --retention 0");
  ASSERT_EQ(o.status, 0) << o.out;
  EXPECT_NE(o.out.find("retention   forever"), std::string::npos) << o.out;
  o = cli(server.address(), "-o json namespace describe --name payments");
  ASSERT_EQ(o.status, 0) << o.out;
  EXPECT_NE(o.out.find("\"description\": \"card payments\""), std::string::npos) << o.out;
  o = cli(server.address(), "namespace list");
  ASSERT_EQ(o.status, 0) << o.out;
  EXPECT_NE(o.out.find("default"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("payments"), std::string::npos) << o.out;

  o = cli(server.address(), "--namespace payments workflow start --type t --id w -t q");
  ASSERT_EQ(o.status, 0) << o.out;
  o = cli(server.address(), "--namespace payments workflow describe --id w");
  EXPECT_EQ(o.status, 0) << o.out;
  o = cli(server.address(), "workflow describe --id w");
  EXPECT_EQ(o.status, 1) << "w is not in default: " << o.out;
  o = run_command("REPRISE_NAMESPACE=nope " + reprise_cli() + " --address " + server.address() + " workflow list");
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_NE(o.out.find("namespace 'nope' does not exist"), std::string::npos) << o.out;
}

TEST(CliApiKeys, KeysAreMadeListedAndRevokedOnTheFileAndSentWithApiKey) {
  TempDir dir;
  const std::string db = dir.file("db");
  const Output created =
      run_command(reprise_cli() + " admin key create --db " + db + " --name ops --role admin --namespace '*'");
  ASSERT_EQ(created.status, 0) << created.out;
  const std::string admin = secret_of(created);
  EXPECT_EQ(admin.size(), 68u) << created.out;
  EXPECT_EQ(admin.rfind("rpk_", 0), 0u) << created.out;
  const Output reader =
      run_command(reprise_cli() + " admin key create --db " + db + " --name dash --role reader --namespace default");
  ASSERT_EQ(reader.status, 0) << reader.out;
  Output o = run_command(reprise_cli() + " admin key create --db " + db + " --name dash --role reader --namespace x");
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_NE(o.out.find("an API key named 'dash' exists already"), std::string::npos) << o.out;
  o = run_command(reprise_cli() + " admin key create --db " + db + " --name bad --role owner --namespace x");
  EXPECT_EQ(o.status, 2) << "an unknown role is a bad command line: " << o.out;
  o = run_command(reprise_cli() + " admin key create --db " + db + " --name 'a b' --role reader --namespace x");
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_NE(o.out.find("an API key's name has 1 to 64 letters"), std::string::npos) << o.out;

  Server server(db);
  o = cli(server.address(), "workflow list");
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_NE(o.out.find("requires an API key"), std::string::npos) << o.out;
  o = cli(server.address(), "--api-key " + admin + " workflow list");
  EXPECT_EQ(o.status, 0) << o.out;
  o = run_command("REPRISE_API_KEY=" + secret_of(reader) + " " + reprise_cli() + " --address " + server.address() +
                  " workflow start --type t --id w -t q");
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_NE(o.out.find("API key 'dash' lacks the role client or admin that StartWorkflow needs"), std::string::npos)
      << o.out;

  o = run_command(reprise_cli() + " admin key revoke --db " + db + " --name dash");
  ASSERT_EQ(o.status, 0) << o.out;
  o = run_command(reprise_cli() + " -o json admin key list --db " + db);
  ASSERT_EQ(o.status, 0) << o.out;
  EXPECT_NE(o.out.find("\"name\": \"dash\""), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find(secret_of(reader)), std::string::npos) << "a listing never shows a secret";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    o = cli(server.address(), "--api-key " + secret_of(reader) + " workflow list");
  } while (o.out.find("has been revoked") == std::string::npos && std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_NE(o.out.find("API key 'dash' has been revoked"), std::string::npos) << o.out;
}

// The output of `reprise <command>` against `server` once it matches
// `expected`, waiting up to 5 s for the server's next reading of its keys.
Output security_cli_once_it_says(Server& server, const std::string& command, const std::string& expected) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  Output o = cli(server.address(), command);
  while (o.out.find(expected) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    o = cli(server.address(), command);
  }
  return o;
}

// On PostgreSQL the keys live in the server's database too, made and revoked
// beside the running server. An empty database is refused: its shard count
// is chosen by the first server, not by a key command.
TEST(CliApiKeys, OnPostgreSQLKeysAreMadeListedAndRevokedInTheDatabase) {
  REPRISE_POSTGRES_DATABASE(url);
  const std::string key_command = reprise_cli() + " admin key create --db '" + url + "' ";
  Output o = run_command(key_command + "--name ops --role admin --namespace '*'");
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_NE(o.out.find("has no Reprise schema yet: start reprise-server --db on it once"), std::string::npos) << o.out;

  Server server(url);
  ASSERT_EQ(cli(server.address(), "workflow list").status, 0) << "no key yet: the server is open on loopback";
  const Output admin = run_command(key_command + "--name ops --role admin --namespace '*'");
  ASSERT_EQ(admin.status, 0) << admin.out;
  const Output reader = run_command(key_command + "--name dash --role reader --namespace default");
  ASSERT_EQ(reader.status, 0) << reader.out;
  o = run_command(key_command + "--name dash --role reader --namespace x");
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_NE(o.out.find("an API key named 'dash' exists already"), std::string::npos) << o.out;

  o = security_cli_once_it_says(server, "workflow list", "requires an API key");
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_NE(o.out.find("requires an API key"), std::string::npos) << "the server read the new keys: " << o.out;
  EXPECT_EQ(cli(server.address(), "--api-key " + secret_of(admin) + " workflow list").status, 0);
  EXPECT_EQ(cli(server.address(), "--api-key " + secret_of(reader) + " workflow list").status, 0);

  o = run_command(reprise_cli() + " admin key revoke --db '" + url + "' --name dash");
  ASSERT_EQ(o.status, 0) << o.out;
  o = run_command(reprise_cli() + " -o json admin key list --db '" + url + "'");
  ASSERT_EQ(o.status, 0) << o.out;
  EXPECT_NE(o.out.find("\"name\": \"dash\""), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\"name\": \"ops\""), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find(secret_of(reader)), std::string::npos) << "a listing never shows a secret";
  o = security_cli_once_it_says(server, "--api-key " + secret_of(reader) + " workflow list", "has been revoked");
  EXPECT_EQ(o.status, 1) << o.out;
  EXPECT_NE(o.out.find("API key 'dash' has been revoked"), std::string::npos) << o.out;
  EXPECT_EQ(cli(server.address(), "--api-key " + secret_of(admin) + " workflow list").status, 0) << "ops still works";
}

}  // namespace
}  // namespace reprise
