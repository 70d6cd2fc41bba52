// The command lines of reprise, reprise-server and reprise-lint as users
// type them, against a real server process: both flag forms, --output
// anywhere, durations, paging in `list`, `show --follow`, --version, and the
// exit codes (0 done, 1 the server said no, 2 a bad command line).
#include "tools/command_line/command_line.hpp"

#include <nlohmann/json.hpp>
#include <thread>

#include "../server/server_harness.hpp"
#include "engine/server/server_flags.hpp"
#include "reprise/client.hpp"
#include "tests/cli/run_cli.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

void start(Connection& connection, const std::string& id) {
  v1::StartWorkflowRequest r;
  r.set_workflow_id(id);
  r.mutable_workflow_type()->set_name("idle");
  r.mutable_task_queue()->set_name("nobody-polls");
  r.set_request_id(detail::new_request_id());
  (void)connection.start_workflow(r);
}

TEST(CommandLine, FlagsTakeTheirValueWithOrWithoutEqualsAndOutputGoesAnywhere) {
  TempDir dir;
  Server server(dir.file("flags.db"));
  const std::string& a = server.address();
  Output spaced = cli(a, "workflow start --type idle -w spaced -t q");
  ASSERT_EQ(spaced.status, 0) << spaced.out;
  Output equals = cli(a, "workflow start --type=idle --workflow-id=equals --task-queue=q");
  ASSERT_EQ(equals.status, 0) << equals.out;
  ASSERT_EQ(cli(a, "workflow terminate --id=equals --reason=done").status, 0);

  for (const char* args : {"-o json workflow list", "workflow list --output json", "workflow list --output=json",
                           "--output=json workflow list --limit 10"}) {
    Output listed = cli(a, args);
    ASSERT_EQ(listed.status, 0) << args << ": " << listed.out;
    const nlohmann::json rows = nlohmann::json::parse(listed.out)["executions"];
    ASSERT_EQ(rows.size(), 2u) << args << ": " << listed.out;
    // One spelling of statuses: what --status takes and `result` prints.
    EXPECT_EQ(rows[0]["status"], "terminated") << args;
    EXPECT_EQ(rows[1]["status"], "running") << args;
  }
  Output described = cli(a, "workflow describe -w spaced --output json");
  ASSERT_EQ(described.status, 0) << described.out;
  EXPECT_EQ(nlohmann::json::parse(described.out)["info"]["status"], "running") << described.out;
  EXPECT_NE(cli(a, "workflow list --status terminated").out.find("equals"), std::string::npos);
}

TEST(CommandLine, DurationsAreParsedAndABadOneIsNamed) {
  TempDir dir;
  Server server(dir.file("durations.db"));
  const std::string& a = server.address();
  for (const auto& [text, seconds] : std::vector<std::pair<std::string, std::string>>{
           {"90s", "90s"}, {"1h30m", "5400s"}, {"7d", "604800s"}, {"250ms", "0.250s"}}) {
    const std::string id = "timeout-" + text;
    Output started = cli(a, "workflow start --type idle -w " + id + " -t q --execution-timeout " + text);
    ASSERT_EQ(started.status, 0) << started.out;
    Output shown = cli(a, "-o json workflow show -w " + id);
    ASSERT_EQ(shown.status, 0) << shown.out;
    EXPECT_EQ(nlohmann::json::parse(shown.out)["events"][0]["workflow_execution_started"]["workflow_execution_timeout"],
              seconds)
        << text;
  }
  Output bad = cli(a, "workflow start --type idle -w x -t q --execution-timeout 5x");
  EXPECT_EQ(bad.status, 2) << bad.out;
  EXPECT_NE(bad.out.find("--execution-timeout: '5x' is not a duration"), std::string::npos) << bad.out;
}

TEST(CommandLine, ABadCommandLineExitsTwoWithUsageAndARefusalExitsOne) {
  TempDir dir;
  Server server(dir.file("exits.db"));
  const std::string& a = server.address();
  Output limit = cli(a, "workflow list --limit abc");
  EXPECT_EQ(limit.status, 2) << limit.out;
  EXPECT_NE(limit.out.find("reprise: --limit: 'abc' is not a whole number"), std::string::npos) << limit.out;
  EXPECT_NE(limit.out.find("Usage: reprise workflow list"), std::string::npos) << limit.out;
  Output command = cli(a, "workflow frobnicate -w x");
  EXPECT_EQ(command.status, 2) << command.out;
  EXPECT_NE(command.out.find("frobnicate"), std::string::npos) << command.out;
  Output group = cli(a, "workflow");
  EXPECT_EQ(group.status, 2) << group.out;
  Output flag = cli(a, "workflow list --colour blue");
  EXPECT_EQ(flag.status, 2) << flag.out;
  EXPECT_NE(flag.out.find("--colour"), std::string::npos) << flag.out;

  ASSERT_EQ(cli(a, "workflow start --type idle -w once -t q").status, 0);
  Output refused = cli(a, "workflow start --type idle -w once -t q");
  EXPECT_EQ(refused.status, 1) << "the id is running: " << refused.out;
  EXPECT_NE(refused.out.find("already running"), std::string::npos) << refused.out;
  EXPECT_EQ(cli(a, "workflow describe -w nobody").status, 1);
  EXPECT_EQ(cli(a, "workflow list").status, 0);

  Output help = cli(a, "--help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("Exit status: 0 done; 1"), std::string::npos) << help.out;
}

TEST(CommandLine, EveryBinaryPrintsItsVersion) {
  const std::string expected = std::string(" ") + command_line::version() + "\n";
  std::vector<std::pair<std::string, std::string>> binaries = {
      {binary("REPRISE_CLI", "reprise"), "reprise"}, {binary("REPRISE_SERVER", "reprise-server"), "reprise-server"}};
  if (std::getenv("REPRISE_LINT") != nullptr) binaries.emplace_back(std::getenv("REPRISE_LINT"), "reprise-lint");
  for (const auto& [path, name] : binaries) {
    Output version = run_command(path + " --version");
    EXPECT_EQ(version.status, 0) << name;
    EXPECT_EQ(version.out, name + expected);
  }
}

TEST(CommandLine, ServerHelpListsEveryFlagTheServerDefines) {
  engine::ServerFlags flags;
  CLI::App app("", "reprise-server");
  command_line::set_up(app);
  engine::add_server_flags(app, flags);
  Output help = run_command(binary("REPRISE_SERVER", "reprise-server") + " --help");
  ASSERT_EQ(help.status, 0) << help.out;
  size_t listed = 0;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) {
      EXPECT_NE(help.out.find("--" + name + " "), std::string::npos) << "--" << name << " missing:\n" << help.out;
      ++listed;
    }
  }
  EXPECT_GE(listed, 30u) << "every flag, not a few";
}

TEST(CommandLine, ListPagesForTheUserBeyondOneServerPage) {
  TempDir dir;
  Server server(dir.file("paging.db"), {"--durability", "normal"});
  const std::string& a = server.address();
  auto connection = Connection::remote(a);
  for (int i = 0; i < 7; ++i) start(*connection, "page-" + std::to_string(i));
  auto rows = [&](const std::string& args) {
    Output listed = cli(a, "-o json workflow list " + args);
    EXPECT_EQ(listed.status, 0) << args << ": " << listed.out;
    return listed.status == 0 ? nlohmann::json::parse(listed.out)["executions"].size() : 0;
  };
  EXPECT_EQ(rows("--limit 5 --page-size 2"), 5u) << "three calls, the last asking for one";
  EXPECT_EQ(rows("--limit 100 --page-size 3"), 7u) << "every row, in three calls";
  // Above the server's own page (1000): the CLI asks for pages it accepts.
  EXPECT_EQ(rows("--limit 1500"), 7u);
}

TEST(CommandLine, ShowFollowPrintsEventsUntilTheRunCloses) {
  TempDir dir;
  Server server(dir.file("follow.db"));
  const std::string& a = server.address();
  auto connection = Connection::remote(a);
  start(*connection, "followed");
  FILE* pipe = popen(
      (binary("REPRISE_CLI", "reprise") + " --address " + a + " workflow show -w followed --follow 2>&1").c_str(), "r");
  std::string out;
  char line[4096];
  // The history so far, then the close as it happens.
  while (out.find("WorkflowTaskScheduled") == std::string::npos && fgets(line, sizeof line, pipe) != nullptr) {
    out += line;
  }
  ASSERT_NE(out.find("WorkflowTaskScheduled"), std::string::npos) << out;
  std::this_thread::sleep_for(200ms);  // well inside the CLI's wait
  detail::terminate(*connection, "followed", "", "seen");
  while (fgets(line, sizeof line, pipe) != nullptr) out += line;
  const int status = pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_NE(out.find("WorkflowExecutionTerminated  reason='seen'"), std::string::npos) << out;
}

}  // namespace
}  // namespace reprise
