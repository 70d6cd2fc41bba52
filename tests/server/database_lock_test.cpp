// One reprise-server per database file: a second server on a file another
// one serves is refused before it reads or writes anything, and the file is
// free again once the first exits, cleanly or by kill -9.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "tests/server/server_harness.hpp"

namespace reprise {
namespace {

struct SecondServerExit {
  bool served = false;  // it said "listening on": it opened the file and serves
  int code = -1;
  std::string stderr_text;
};

// Runs a second server on `db` until it exits on its own, or until it says
// it serves (then it is killed).
SecondServerExit run_second_server(const TempDir& dir, const std::string& db) {
  const std::string log = dir.file("second.log");
  ChildProcess second({std::getenv("REPRISE_SERVER"), "--db", db, "--listen", "127.0.0.1:0"}, log);
  SecondServerExit exit;
  std::string line;
  exit.served = second.read_line(line) && line.find("listening on") != std::string::npos;
  if (exit.served) second.kill(SIGKILL);
  const int status = second.wait();
  exit.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(log);
  exit.stderr_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return exit;
}

TEST(DatabaseLock, ASecondServerOnTheSameFileIsRefusedAndTheFirstServesOn) {
  TempDir dir;
  const std::string db = dir.file("one.db");
  Server first(db);
  v1::StartWorkflowResponse started;
  ASSERT_TRUE(call(first.stub(), &Stub::StartWorkflow, start_request("before"), &started).ok());

  const SecondServerExit second = run_second_server(dir, db);
  EXPECT_FALSE(second.served) << "a second server serves the same file";
  EXPECT_NE(second.code, 0);
  EXPECT_NE(second.stderr_text.find("'" + db + "' is in use by another reprise-server"), std::string::npos)
      << second.stderr_text;

  // The refused server took nothing from the first: its task is still there.
  ASSERT_TRUE(call(first.stub(), &Stub::StartWorkflow, start_request("after"), &started).ok());
  EXPECT_EQ(next_workflow_task(first.stub()).workflow_execution().workflow_id(), "before");
  EXPECT_EQ(next_workflow_task(first.stub()).workflow_execution().workflow_id(), "after");
}

TEST(DatabaseLock, TheFileIsFreeOnceTheServerExitsCleanlyOrIsKilled) {
  TempDir dir;
  const std::string db = dir.file("one.db");
  {
    Server first(db);
    v1::StartWorkflowResponse started;
    ASSERT_TRUE(call(first.stub(), &Stub::StartWorkflow, start_request("wf"), &started).ok());
    EXPECT_EQ(first.terminate(), 0);
  }
  {
    Server again(db);  // after SIGTERM
    EXPECT_EQ(describe(again.stub(), "wf").info().execution().workflow_id(), "wf");
    again.kill9();
  }
  Server after_kill(db);  // the kernel dropped the lock with the process
  EXPECT_EQ(describe(after_kill.stub(), "wf").info().execution().workflow_id(), "wf");
}

}  // namespace
}  // namespace reprise
