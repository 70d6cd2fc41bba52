// A real reprise-server started on files that are not sound databases, and
// `reprise admin check` on them (issue 13 item 19): an existing empty file, a
// file of garbage, another program's database and a Reprise database with a
// damaged page are refused at start, naming the file, the problem and the way
// out, and nothing is written to them.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "../store/damage.hpp"
#include "server_harness.hpp"

namespace reprise {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

struct ServerRun {
  bool served = false;  // it printed "listening": it took the file
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Starts reprise-server on `db` and reads what it says until it exits, or
// until it serves (then it is stopped with SIGTERM).
ServerRun run_server(const std::string& db, const std::vector<std::string>& flags = {}) {
  const char* binary = std::getenv("REPRISE_SERVER");
  EXPECT_NE(binary, nullptr) << "REPRISE_SERVER is not set";
  std::vector<std::string> args{
      "/bin/sh",  "-c",         "exec \"$0\" \"$@\" 2>&1", binary ? binary : "reprise-server", "--db", db,
      "--listen", "127.0.0.1:0"};
  args.insert(args.end(), flags.begin(), flags.end());
  ChildProcess child(args);
  ServerRun run;
  std::string line;
  while (child.read_line(line)) {
    run.output += line + "\n";
    if (contains(line, "listening on")) {
      run.served = true;
      child.kill(SIGTERM);
    }
  }
  const int status = child.wait();
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

struct Output {
  int status = -1;
  std::string out;
};

// Runs the CLI with `args`, stdout and stderr captured together.
Output cli(const std::string& args) {
  const char* binary = std::getenv("REPRISE_CLI");
  EXPECT_NE(binary, nullptr) << "REPRISE_CLI is not set";
  const std::string command = std::string(binary ? binary : "reprise") + " " + args + " 2>&1";
  Output o;
  FILE* pipe = popen(command.c_str(), "r");
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) o.out.append(buf, n);
  const int status = pclose(pipe);
  o.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

// A Reprise database with `count` workflows in it, the server stopped cleanly
// (so every page is in the file, none in a WAL).
void fill(const std::string& db, int count) {
  Server server(db);
  for (int i = 0; i < count; ++i) {
    v1::StartWorkflowRequest r = start_request("wf-" + std::to_string(i));
    r.mutable_input()->add_payloads()->set_data(std::string(400, static_cast<char>('a' + i % 26)));
    v1::StartWorkflowResponse out;
    ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, r, &out).ok());
  }
  ASSERT_EQ(server.terminate(), 0);
}

TEST(StorageFaults, AnExistingEmptyFileIsRefusedAndLeftEmpty) {
  TempDir dir;
  const std::string db = dir.file("empty.db");
  write_file(db, "");
  const ServerRun run = run_server(db);
  EXPECT_FALSE(run.served) << run.output;
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, "database '" + db + "' is an existing empty file (0 bytes)")) << run.output;
  EXPECT_TRUE(contains(run.output, "--init-empty-file")) << run.output;
  EXPECT_EQ(std::filesystem::file_size(db), 0u);
  EXPECT_FALSE(std::filesystem::exists(db + "-wal"));

  // Told to, the server starts a new database in it, which is then a database.
  {
    Server server(db, {"--init-empty-file"});
    v1::StartWorkflowResponse out;
    EXPECT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("first"), &out).ok());
    EXPECT_EQ(server.terminate(), 0);
  }
  const ServerRun again = run_server(db);
  EXPECT_TRUE(again.served) << again.output;
}

TEST(StorageFaults, AFileOfGarbageIsRefusedUntouched) {
  TempDir dir;
  const std::string db = dir.file("garbage.db");
  std::mt19937 random(7);
  std::string garbage(65536, '\0');
  for (char& c : garbage) c = static_cast<char>(random());
  write_file(db, garbage);
  const ServerRun run = run_server(db);
  EXPECT_FALSE(run.served) << run.output;
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, "database '" + db + "' is not a SQLite database")) << run.output;
  EXPECT_TRUE(read_file(db) == garbage);
  // The flag for empty files does not make garbage acceptable.
  EXPECT_FALSE(run_server(db, {"--init-empty-file"}).served);
  EXPECT_TRUE(read_file(db) == garbage);
}

TEST(StorageFaults, AnotherProgramsDatabaseIsRefusedUntouched) {
  TempDir dir;
  const std::string db = dir.file("theirs.db");
  {
    auto other = engine::SqliteDb::open_as_is(db, true);  // rollback journal, as most programs keep
    ASSERT_TRUE(other.is_ok());
    ASSERT_TRUE((*other)->exec("CREATE TABLE invoices (id INTEGER PRIMARY KEY, cents INTEGER)").is_ok());
  }
  const std::string before = read_file(db);
  const ServerRun run = run_server(db);
  EXPECT_FALSE(run.served) << run.output;
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, "database '" + db + "' is not a Reprise database")) << run.output;
  EXPECT_TRUE(read_file(db) == before) << "switching it to WAL mode would rewrite its header";
}

TEST(StorageFaults, ADamagedPageIsRefusedAtStartUnlessTheCheckIsSkipped) {
  TempDir dir;
  const std::string db = dir.file("damaged.db");
  fill(db, 400);

  // Sound: the server checks it, logs how long that took, and serves.
  const ServerRun sound = run_server(db, {"--log-level", "info"});
  EXPECT_TRUE(sound.served) << sound.output;
  EXPECT_TRUE(contains(sound.output, "msg=\"database passed quick_check\"")) << sound.output;
  EXPECT_TRUE(contains(sound.output, "quick_check_ms=")) << sound.output;

  ASSERT_GT(engine::testing::damage_table_page(db, "executions"), 1);
  const std::string damaged = read_file(db);
  const ServerRun run = run_server(db);
  EXPECT_FALSE(run.served) << run.output;
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_TRUE(contains(run.output, "DATA_LOSS: database '" + db + "' is damaged: PRAGMA quick_check found "))
      << run.output;
  EXPECT_TRUE(contains(run.output, "--skip-quick-check")) << run.output;
  EXPECT_TRUE(read_file(db) == damaged) << "nothing is written to a refused file";

  // For a file too big to read at every start, the check can be skipped.
  const ServerRun skipped = run_server(db, {"--skip-quick-check"});
  EXPECT_TRUE(skipped.served) << skipped.output;
  EXPECT_TRUE(contains(skipped.output, "without quick_check")) << skipped.output;

  // The full check names the damage and exits 1.
  const Output check = cli("admin check --db " + db);
  EXPECT_EQ(check.status, 1) << check.out;
  EXPECT_EQ(check.out.rfind("damaged: database '" + db + "' (integrity_check found ", 0), 0u) << check.out;
  const Output json = cli("--output json admin check --db " + db);
  EXPECT_EQ(json.status, 1) << json.out;
  EXPECT_TRUE(contains(json.out, "\"ok\": false")) << json.out;
}

TEST(StorageFaults, AdminCheckSaysOkForASoundDatabaseAlsoWhileTheServerRuns) {
  TempDir dir;
  const std::string db = dir.file("sound.db");
  fill(db, 50);
  const Output stopped = cli("admin check --db " + db);
  EXPECT_EQ(stopped.status, 0) << stopped.out;
  EXPECT_EQ(stopped.out.rfind("ok: database '" + db + "' (schema version ", 0), 0u) << stopped.out;

  Server server(db);
  for (int i = 0; i < 20; ++i) {
    v1::StartWorkflowResponse out;
    ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("more-" + std::to_string(i)), &out).ok());
  }
  const Output running = cli("admin check --db " + db);
  EXPECT_EQ(running.status, 0) << running.out;
  EXPECT_EQ(running.out.rfind("ok: database '" + db + "'", 0), 0u) << running.out;
  const Output quick = cli("--output json admin check --db " + db + " --quick true");
  EXPECT_EQ(quick.status, 0) << quick.out;
  EXPECT_TRUE(contains(quick.out, "\"check\": \"quick_check\"")) << quick.out;
  EXPECT_TRUE(contains(quick.out, "\"ok\": true")) << quick.out;
  // The server kept serving.
  v1::StartWorkflowResponse out;
  EXPECT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("after"), &out).ok());
  EXPECT_EQ(server.terminate(), 0);
}

TEST(StorageFaults, AdminCheckRefusesWhatIsNotARepriseDatabaseAndCreatesNothing) {
  TempDir dir;
  const std::string empty = dir.file("empty.db");
  write_file(empty, "");
  const Output e = cli("admin check --db " + empty);
  EXPECT_EQ(e.status, 1) << e.out;
  EXPECT_TRUE(contains(e.out, "is an empty file (0 bytes), not a database")) << e.out;

  const std::string missing = dir.file("missing.db");
  const Output m = cli("admin check --db " + missing);
  EXPECT_EQ(m.status, 1) << m.out;
  EXPECT_TRUE(contains(m.out, "NOT_FOUND: database '" + missing + "' does not exist")) << m.out;
  EXPECT_FALSE(std::filesystem::exists(missing));

  const Output usage = cli("admin check");
  EXPECT_EQ(usage.status, 2) << usage.out;
  EXPECT_TRUE(contains(usage.out, "--db is required")) << usage.out;
}

}  // namespace
}  // namespace reprise
