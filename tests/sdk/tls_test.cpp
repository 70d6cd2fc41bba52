// TLS and mutual TLS between the SDK and a real reprise-server, with
// certificates made by the openssl command for each test: the server's
// certificate is checked by the client, a client certificate by a server
// that requires one, and a plaintext or untrusted peer gets nowhere.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "../server/server_harness.hpp"
#include "../server/test_certificates.hpp"
#include "reprise/client.hpp"
#include "reprise/worker.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

Workflow<std::string> echo(WorkflowContext&, std::string text) { co_return text; }
inline constexpr WorkflowDef<&echo> echo_wf{"echo"};

std::vector<std::string> tls_flags(const Certificates& c, bool require_client_cert) {
  std::vector<std::string> flags{"--tls-cert", c.path("server.pem"), "--tls-key", c.path("server.key")};
  if (require_client_cert) flags.insert(flags.end(), {"--tls-client-ca", c.path("ca.pem")});
  return flags;
}

// Runs one workflow through `connection`; the error text when a call fails.
std::string run_echo(const std::shared_ptr<Connection>& connection, const std::string& id) {
  try {
    Worker worker(connection, {.task_queue = "tls", .workflow_threads = 1, .activity_threads = 1});
    worker.register_workflow(echo_wf);
    worker.start();
    Client client(connection);
    std::string result = client.execute(echo_wf, {.id = id, .task_queue = "tls"}, std::string("over tls"));
    worker.stop();
    return result;
  } catch (const RpcError& e) {
    return "RpcError " + std::to_string(e.code()) + ": " + e.what();
  }
}

const std::string kUnavailable = "RpcError " + std::to_string(static_cast<int>(grpc::StatusCode::UNAVAILABLE));

TEST(Tls, TheClientChecksTheServerCertificate) {
  Certificates c;
  Server server(c.path("tls.db"), tls_flags(c, false));
  EXPECT_EQ(run_echo(Connection::remote(server.address(), TlsOptions::from_files(c.path("ca.pem"))), "a"), "over tls");

  const std::string plaintext = run_echo(Connection::remote(server.address()), "b");
  EXPECT_EQ(plaintext.rfind(kUnavailable, 0), 0u) << plaintext;
  const std::string untrusted =
      run_echo(Connection::remote(server.address(), TlsOptions::from_files(c.path("other-ca.pem"))), "c");
  EXPECT_EQ(untrusted.rfind(kUnavailable, 0), 0u) << untrusted;
  // By name: the certificate names localhost too.
  const std::string port = server.address().substr(server.address().rfind(':'));
  EXPECT_EQ(run_echo(Connection::remote("localhost" + port, TlsOptions::from_files(c.path("ca.pem"))), "d"),
            "over tls");
}

TEST(Tls, AServerThatRequiresClientCertificatesTakesOnlyThoseItsCaSigned) {
  Certificates c;
  Server server(c.path("mtls.db"), tls_flags(c, true));
  EXPECT_EQ(run_echo(Connection::remote(server.address(), TlsOptions::from_files(c.path("ca.pem"), c.path("worker.pem"),
                                                                                 c.path("worker.key"))),
                     "a"),
            "over tls");
  const std::string anonymous =
      run_echo(Connection::remote(server.address(), TlsOptions::from_files(c.path("ca.pem"))), "b");
  EXPECT_EQ(anonymous.rfind(kUnavailable, 0), 0u) << anonymous;
  const std::string stranger = run_echo(
      Connection::remote(server.address(),
                         TlsOptions::from_files(c.path("ca.pem"), c.path("stranger.pem"), c.path("stranger.key"))),
      "c");
  EXPECT_EQ(stranger.rfind(kUnavailable, 0), 0u) << stranger;
}

TEST(Tls, TheEnvironmentNamesTheFiles) {
  Certificates c;
  ::setenv("REPRISE_TLS_CA", c.path("ca.pem").c_str(), 1);
  ::setenv("REPRISE_TLS_CERT", c.path("worker.pem").c_str(), 1);
  ::setenv("REPRISE_TLS_KEY", c.path("worker.key").c_str(), 1);
  std::optional<TlsOptions> tls = TlsOptions::from_environment();
  ::unsetenv("REPRISE_TLS_CA");
  ::unsetenv("REPRISE_TLS_CERT");
  ::unsetenv("REPRISE_TLS_KEY");
  ASSERT_TRUE(tls.has_value());
  EXPECT_NE(tls->client_key_pem.find("PRIVATE KEY"), std::string::npos);
  EXPECT_FALSE(TlsOptions::from_environment().has_value());
  EXPECT_THROW(TlsOptions::from_files(c.path("missing.pem")), Error);
  EXPECT_THROW(TlsOptions::from_files(c.path("ca.pem"), c.path("worker.pem")), Error) << "a certificate without key";
}

// Exit status and stderr of a server that refuses to start.
std::pair<int, std::string> refused_start(const TempDir& dir, std::vector<std::string> flags) {
  std::vector<std::string> argv{std::getenv("REPRISE_SERVER"), "--db", dir.file("refused.db")};
  argv.insert(argv.end(), flags.begin(), flags.end());
  const std::string log = dir.file("refused.log");
  std::remove(log.c_str());
  ChildProcess server(argv, log);
  const int status = server.wait();
  std::ifstream in(log);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1,
          std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>())};
}

TEST(Tls, TheServerRefusesPlaintextBeyondLoopbackAndBadFilesBeforeOpeningTheDatabase) {
  Certificates c;
  auto [code, text] = refused_start(c.dir, {"--listen", "0.0.0.0:0"});
  EXPECT_EQ(code, 1);
  EXPECT_NE(text.find("refusing to serve plaintext on 0.0.0.0:0"), std::string::npos) << text;
  EXPECT_NE(text.find("--insecure"), std::string::npos) << text;

  std::tie(code, text) = refused_start(c.dir, {"--tls-cert", c.path("server.pem"), "--tls-key", c.path("worker.key")});
  EXPECT_EQ(code, 1);
  EXPECT_NE(text.find("is not the private key of --tls-cert"), std::string::npos) << text;

  std::tie(code, text) = refused_start(c.dir, {"--tls-cert", c.path("server.key"), "--tls-key", c.path("server.key")});
  EXPECT_EQ(code, 1);
  EXPECT_NE(text.find("holds no PEM CERTIFICATE"), std::string::npos) << text;

  std::tie(code, text) = refused_start(c.dir, {"--tls-cert", c.path("server.pem")});
  EXPECT_EQ(code, 2) << "a certificate without its key is a bad command line: " << text;
  EXPECT_FALSE(std::filesystem::exists(c.path("refused.db"))) << "nothing was opened";

  // With TLS, or knowingly plaintext, any address is served.
  ChildProcess insecure({std::getenv("REPRISE_SERVER"), "--db", c.path("any.db"), "--listen", "0.0.0.0:0", "--insecure",
                         "--log-level", "off"});
  std::string line;
  ASSERT_TRUE(insecure.read_line(line));
  EXPECT_NE(line.find("listening on 0.0.0.0:"), std::string::npos) << line;
}

}  // namespace
}  // namespace reprise
