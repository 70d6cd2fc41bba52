// reprise-server --config FILE: flags from a TOML file, the command line
// over them, and a bad file refused naming the file and the line.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "tests/server/server_harness.hpp"

namespace reprise {
namespace {

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Exit {
  int code = -1;
  std::string stderr_text;
};

// Runs the server with `args` until it exits on its own (a refused start).
Exit run_to_exit(const TempDir& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv{std::getenv("REPRISE_SERVER")};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string log = dir.file("stderr.log");
  std::filesystem::remove(log);
  ChildProcess server(argv, log);
  const int status = server.wait();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(log)};
}

TEST(ConfigFile, FlagsComeFromTheFileAndTheCommandLineOverridesThem) {
  TempDir dir;
  const std::string config = dir.file("reprise.toml");
  write_file(config,
             "# the server's settings\n"
             "db = \"" +
                 dir.file("from-file.db") +
                 "\"\n"
                 "listen = \"127.0.0.1:0\"\n"
                 "poll_timeout_ms = 500\n"
                 "skip-quick-check = true\n"
                 "retention = \"2d\"\n"
                 "log-level = \"warn\"\n");
  {
    Server server(dir.file("from-flag.db"), {"--config", config});  // the harness passes --db too
    v1::StartWorkflowResponse started;
    ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("wf"), &started).ok());
  }
  EXPECT_TRUE(std::filesystem::exists(dir.file("from-flag.db"))) << "--db on the command line wins";
  EXPECT_FALSE(std::filesystem::exists(dir.file("from-file.db")));

  ChildProcess alone({std::getenv("REPRISE_SERVER"), "--config", config});
  std::string line;
  ASSERT_TRUE(alone.read_line(line));
  EXPECT_NE(line.find("listening on 127.0.0.1:"), std::string::npos) << line;
  EXPECT_NE(line.find(dir.file("from-file.db")), std::string::npos) << "the file's db: " << line;
}

TEST(ConfigFile, AnUnknownKeyABadValueOrBadTomlIsAUsageErrorNamingFileAndLine) {
  TempDir dir;
  const std::string db = dir.file("x.db");
  write_file(dir.file("typo.toml"), "db = \"" + db + "\"\n\nlisten_adress = \"127.0.0.1:0\"\n");
  Exit typo = run_to_exit(dir, {"--config", dir.file("typo.toml")});
  EXPECT_EQ(typo.code, 2);
  EXPECT_NE(typo.stderr_text.find("typo.toml:3: unknown key 'listen_adress'"), std::string::npos) << typo.stderr_text;

  write_file(dir.file("value.toml"), "max-pending-requests = \"many\"\n");
  Exit value = run_to_exit(dir, {"--config", dir.file("value.toml"), "--db", db});
  EXPECT_EQ(value.code, 2);
  EXPECT_NE(value.stderr_text.find("max-pending-requests"), std::string::npos) << value.stderr_text;

  write_file(dir.file("table.toml"), "[server]\ndb = \"x\"\n");
  Exit table = run_to_exit(dir, {"--config", dir.file("table.toml")});
  EXPECT_EQ(table.code, 2);
  EXPECT_NE(table.stderr_text.find("unknown key 'server'"), std::string::npos) << table.stderr_text;

  write_file(dir.file("syntax.toml"), "db = \"unterminated\n");
  Exit syntax = run_to_exit(dir, {"--config", dir.file("syntax.toml")});
  EXPECT_EQ(syntax.code, 2);
  EXPECT_NE(syntax.stderr_text.find("syntax.toml is not valid TOML"), std::string::npos) << syntax.stderr_text;
  EXPECT_NE(syntax.stderr_text.find(" 1 | db = "), std::string::npos) << "the line is shown: " << syntax.stderr_text;

  Exit missing = run_to_exit(dir, {"--config", dir.file("none.toml")});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.stderr_text.find("none.toml"), std::string::npos) << missing.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(db)) << "a refused start creates nothing";
}

}  // namespace
}  // namespace reprise
