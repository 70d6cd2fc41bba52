// reprise-server as a real process on loopback, with a real SQLite file (and
// the end-to-end tests also on a PostgreSQL database of the test process's
// own), driven through the raw gRPC API; killed with SIGKILL and restarted.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

#include "../store/test_postgres.hpp"
#include "server_harness.hpp"

namespace reprise {
namespace {

// Drives every workflow on queue "q" through "one activity, then complete"
// until `count` of them have completed.
void run_worker(Stub& stub, int count) {
  int completed = 0;
  for (int round = 0; round < 20 * count && completed < count; ++round) {
    v1::PollActivityTaskRequest ar;
    ar.mutable_task_queue()->set_name("q");
    v1::PollActivityTaskResponse activity;
    if (auto wft = poll_workflow(stub); !wft.task_token().empty()) {
      const bool activity_done =
          wft.history().events(wft.history().events_size() - 3).event_type() == v1::EVENT_TYPE_ACTIVITY_TASK_COMPLETED;
      ASSERT_TRUE(complete(stub, wft.task_token(), {activity_done ? finish("done") : schedule("1")}).ok());
      completed += activity_done ? 1 : 0;
      continue;
    }
    if (call(stub, &Stub::PollActivityTask, ar, &activity).ok() && !activity.task_token().empty()) {
      v1::CompleteActivityRequest done;
      done.set_task_token(activity.task_token());
      done.mutable_result()->add_payloads()->set_data("hi");
      v1::CompleteActivityResponse ignored;
      ASSERT_TRUE(call(stub, &Stub::CompleteActivity, done, &ignored).ok());
    }
  }
  EXPECT_EQ(completed, count);
}

// The server's --db: a file in a temporary directory, or a new database of
// the test process's PostgreSQL (skipped without one, failed under CI).
enum class Database { kSqlite, kPostgres };

class ServerOnBothStores : public ::testing::TestWithParam<Database> {
 protected:
  void SetUp() override {
    if (GetParam() == Database::kSqlite) {
      db_ = dir_.file("server.db");
      return;
    }
    REPRISE_POSTGRES_DATABASE(url);
    db_ = url;
    // A node that keeps its name across a restart takes its shards back at
    // once, without waiting for the killed process's leases to run out.
    restart_flags_ = {"--node-id", "restarting-node"};
  }
  TempDir dir_;
  std::string db_;
  std::vector<std::string> restart_flags_;
};

INSTANTIATE_TEST_SUITE_P(Server, ServerOnBothStores, ::testing::Values(Database::kSqlite, Database::kPostgres),
                         [](const auto& info) { return info.param == Database::kSqlite ? "Sqlite" : "Postgres"; });

TEST_P(ServerOnBothStores, HelloWorkflowOverLoopback) {
  Server server(db_);
  v1::HealthResponse health;
  ASSERT_TRUE(call(server.stub(), &Stub::Health, v1::HealthRequest(), &health).ok());
  EXPECT_EQ(health.status(), "SERVING");

  v1::StartWorkflowResponse started;
  ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("hello-1"), &started).ok());
  run_worker(server.stub(), 1);

  v1::GetHistoryRequest h;
  h.mutable_workflow_execution()->set_workflow_id("hello-1");
  v1::GetHistoryResponse history;
  ASSERT_TRUE(call(server.stub(), &Stub::GetHistory, h, &history).ok());
  ASSERT_EQ(history.history().events_size(), 11);
  EXPECT_EQ(history.history().events(10).event_type(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
  EXPECT_EQ(server.terminate(), 0);
  EXPECT_EQ(server.last_line(), "reprise-server: stopped cleanly");
}

TEST(Server, BadRequestsGetTheRightStatusAndNameTheField) {
  TempDir dir;
  Server server(dir.file("bad.db"));
  v1::StartWorkflowResponse out;
  grpc::Status s = call(server.stub(), &Stub::StartWorkflow, start_request(""), &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "workflow_id is required");

  ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("dup"), &out).ok());
  auto second = start_request("dup");
  second.set_request_id("another");
  EXPECT_EQ(call(server.stub(), &Stub::StartWorkflow, second, &out).error_code(), grpc::StatusCode::ALREADY_EXISTS);

  EXPECT_EQ(complete(server.stub(), "forged", {}).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  auto task = poll_workflow(server.stub());
  v1::Command no_timeout = schedule("a");
  no_timeout.mutable_schedule_activity_task()->clear_start_to_close_timeout();
  s = complete(server.stub(), task.task_token(), {no_timeout});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("start_to_close_timeout or schedule_to_close_timeout is required"),
            std::string::npos);
  ASSERT_TRUE(complete(server.stub(), task.task_token(), {finish("x")}).ok());
  EXPECT_EQ(complete(server.stub(), task.task_token(), {}).error_code(), grpc::StatusCode::NOT_FOUND)
      << "a stale token";

  v1::SignalWorkflowRequest late;
  late.mutable_workflow_execution()->set_workflow_id("dup");
  late.set_signal_name("approve");
  v1::SignalWorkflowResponse ignored;
  EXPECT_EQ(call(server.stub(), &Stub::SignalWorkflow, late, &ignored).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

TEST(Server, APollWhoseClientGaveUpDoesNotSwallowATask) {
  TempDir dir;
  // A poll timeout far longer than the wait below: a poll that ignored its
  // client's cancel would still be parked when the task comes.
  Server server(dir.file("gone.db"), {"--poll-timeout-ms", "5000"});
  {
    grpc::ClientContext impatient;
    impatient.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
    v1::PollWorkflowTaskRequest r;
    r.mutable_task_queue()->set_name("q");
    v1::PollWorkflowTaskResponse out;
    EXPECT_EQ(server.stub().PollWorkflowTask(&impatient, r, &out).error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  }
  // Time for the cancel to reach the engine (over 300 ms under TSan).
  std::this_thread::sleep_for(std::chrono::seconds(1));
  v1::StartWorkflowResponse started;
  ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("wanted"), &started).ok());
  const auto before = std::chrono::steady_clock::now();
  auto task = poll_workflow(server.stub());
  EXPECT_FALSE(task.task_token().empty()) << "the abandoned poll did not take it";
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(3));
}

// A password in the database URL appears nowhere the server writes: not in
// its listening line, not in its log.
TEST(ServerOnPostgres, NeitherItsOutputNorItsLogShowTheDatabasePassword) {
  REPRISE_POSTGRES_DATABASE(url);
  // The test's PostgreSQL trusts loopback, so any password connects.
  const std::string user = "postgresql://postgres@";
  std::string with_password = url;
  if (with_password.starts_with(user)) with_password.replace(0, user.size(), "postgresql://postgres:s3cret-pw@");
  ASSERT_NE(with_password, url);
  TempDir dir;
  const std::string log = dir.file("server.log");
  ChildProcess server(
      {std::getenv("REPRISE_SERVER"), "--db", with_password, "--listen", "127.0.0.1:0", "--log-level", "info"}, log);
  std::string line;
  ASSERT_TRUE(server.read_line(line));
  EXPECT_NE(line.find("listening on"), std::string::npos) << line;
  EXPECT_NE(line.find("postgresql://postgres:***@"), std::string::npos) << line;
  EXPECT_EQ(line.find("s3cret-pw"), std::string::npos) << line;
  server.kill(SIGTERM);
  while (server.read_line(line)) EXPECT_EQ(line.find("s3cret-pw"), std::string::npos) << line;
  EXPECT_EQ(server.wait(), 0);
  std::ifstream in(log);
  const std::string logged((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(logged.find("msg=\"server listening\""), std::string::npos) << logged;
  EXPECT_EQ(logged.find("s3cret-pw"), std::string::npos) << logged;
}

TEST_P(ServerOnBothStores, EveryWorkflowCompletesAfterKillNineAndRestart) {
  const std::string& db = db_;
  constexpr int kWorkflows = 20;
  {
    Server server(db, restart_flags_);
    for (int i = 0; i < kWorkflows; ++i) {
      v1::StartWorkflowResponse out;
      ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("wf-" + std::to_string(i)), &out).ok());
    }
    // Half get as far as their activity before the crash.
    for (int i = 0; i < kWorkflows / 2; ++i) {
      auto task = poll_workflow(server.stub());
      ASSERT_TRUE(complete(server.stub(), task.task_token(), {schedule("1")}).ok());
    }
    server.kill9();
  }
  Server restarted(db, restart_flags_);
  run_worker(restarted.stub(), kWorkflows);
  for (int i = 0; i < kWorkflows; ++i) {
    v1::GetHistoryRequest h;
    h.mutable_workflow_execution()->set_workflow_id("wf-" + std::to_string(i));
    v1::GetHistoryResponse history;
    ASSERT_TRUE(call(restarted.stub(), &Stub::GetHistory, h, &history).ok());
    const auto& events = history.history().events();
    for (int j = 0; j < events.size(); ++j) EXPECT_EQ(events[j].event_id(), j + 1) << "no event lost or doubled";
    EXPECT_EQ(events[events.size() - 1].event_type(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);
  }
}

// A worker took an activity, then the server was killed; its start-to-close
// timeout came due while the server was down. The restarted server fires it
// from the timer row (the worker is gone too: nobody will ever answer).
TEST(Server, AnActivityTimeoutThatCameDueWhileKilledFiresAfterRestart) {
  TempDir dir;
  const std::string db = dir.file("timeouts.db");
  {
    // The start committed before the hand-out, with its timeout timer (a
    // start held in memory is lost with the process: held_start_test.cpp).
    Server server(db, {"--max-held-start", "0"});
    v1::StartWorkflowResponse started;
    ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("held"), &started).ok());
    v1::Command activity = schedule("1");
    activity.mutable_schedule_activity_task()->mutable_start_to_close_timeout()->set_seconds(2);
    activity.mutable_schedule_activity_task()->mutable_retry_policy()->set_maximum_attempts(1);
    ASSERT_TRUE(complete(server.stub(), next_workflow_task(server.stub()).task_token(), {activity}).ok());
    ASSERT_FALSE(next_activity_task(server.stub()).task_token().empty());  // taken, never answered
    server.kill9();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // the timeout passes while nothing runs
  Server restarted(db);
  const auto task = next_workflow_task(restarted.stub());
  ASSERT_FALSE(task.task_token().empty()) << "the timeout never reached the workflow";
  const v1::HistoryEvent* timed_out = nullptr;
  for (const auto& e : task.history().events()) {
    if (e.has_activity_task_timed_out()) timed_out = &e;
  }
  ASSERT_NE(timed_out, nullptr) << task.history().DebugString();
  EXPECT_EQ(timed_out->activity_task_timed_out().failure().timeout_type(), v1::TIMEOUT_TYPE_START_TO_CLOSE);
}

// The stop signals reach only the thread that waits for them: every other
// thread blocks SIGTERM and SIGINT (a thread that did not would take the
// signal's default action and kill the server mid-request). The waiting
// thread shows them unblocked while it waits in sigwait.
TEST(Server, NoThreadButTheWaitingOneCanTakeTheStopSignals) {
  TempDir dir;
  Server server(dir.file("signals.db"));
  const std::string tasks = "/proc/" + std::to_string(server.pid()) + "/task";
  int threads = 0;
  for (const auto& task : std::filesystem::directory_iterator(tasks)) {
    std::ifstream status(task.path() / "status");
    std::string name, line;
    uint64_t blocked = 0;
    while (std::getline(status, line)) {
      if (line.rfind("Name:", 0) == 0) name = line.substr(5);
      if (line.rfind("SigBlk:", 0) == 0) blocked = std::stoull(line.substr(7), nullptr, 16);
    }
    ++threads;
    if (task.path().filename() == std::to_string(server.pid())) continue;  // main: in sigwait
    const uint64_t stop_signals = (1ull << (SIGTERM - 1)) | (1ull << (SIGINT - 1));
    EXPECT_EQ(blocked & stop_signals, stop_signals)
        << "thread " << task.path().filename() << name << " would take SIGTERM or SIGINT";
  }
  EXPECT_GT(threads, 3);
  EXPECT_EQ(server.terminate(), 0);
}

// perf, top -H and /proc/PID/task/*/comm tell the server's threads apart
// only if each names its job: a thread left unnamed shows the process's
// name, and two pools whose threads share one name look like one pool.
void expect_every_thread_names_its_job(Server& server, std::vector<std::string> jobs) {
  const std::string proc = "/proc/" + std::to_string(server.pid());
  std::string main_name;  // what an unnamed thread shows: the program's name
  std::getline(std::ifstream(proc + "/comm"), main_name);
  size_t runtime_threads = 0;  // threads no code of ours starts
#if defined(__SANITIZE_THREAD__)
  runtime_threads = 1;  // ThreadSanitizer's background thread keeps the program's name
#endif
  // A thread names itself as its first step, so a thread just started
  // (gRPC starts some on demand) may show the program's name for a moment:
  // look again, for up to 5 s, before calling one unnamed. Seen under
  // ThreadSanitizer, in a whole-suite run on a loaded machine.
  std::multiset<std::string> names;
  for (int look = 0; look < 50; ++look) {
    names.clear();
    for (const auto& task : std::filesystem::directory_iterator(proc + "/task")) {
      if (task.path().filename() == std::to_string(server.pid())) continue;
      std::ifstream comm(task.path() / "comm");
      std::string name;
      std::getline(comm, name);
      names.insert(name);
    }
    if (names.count(main_name) == runtime_threads) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(names.count(main_name), runtime_threads) << "a thread left unnamed: " << ::testing::PrintToString(names);
  for (const char* job : {"executor-0", "reads-0", "uploads-0", "blob-io-0", "timers", "deadlines", "retention",
                          "blob-gc", "health", "api-keys"}) {
    jobs.push_back(job);
  }
  for (const std::string& job : jobs) {
    EXPECT_EQ(names.count(job), 1u) << job << " in " << ::testing::PrintToString(names);
  }
  // The HTTP listener's pool threads inherit the name of the thread that
  // starts them.
  EXPECT_GE(names.count("http"), 1u) << ::testing::PrintToString(names);
  EXPECT_EQ(server.terminate(), 0);
}

TEST(Server, EveryThreadItStartsNamesItsJob) {
  TempDir dir;
  Server server(dir.file("names.db"), {"--metrics-listen", "127.0.0.1:0"});
  expect_every_thread_names_its_job(server, {"writer", "checkpointer"});
}

TEST(ServerOnPostgres, EveryThreadItStartsNamesItsJob) {
  REPRISE_POSTGRES_DATABASE(url);
  Server server(url, {"--metrics-listen", "127.0.0.1:0"});
  expect_every_thread_names_its_job(server, {"writer", "shard-leases"});
}

TEST(Server, ShutsDownCleanlyWithAPollParked) {
  TempDir dir;
  // Polls wait a minute here, far longer than the shutdown may take: the poll
  // can only end in time if the shutdown answers it.
  Server server(dir.file("term.db"), {"--poll-timeout-ms", "60000"});
  std::atomic<bool> answered{false};
  grpc::Status status;
  v1::PollWorkflowTaskResponse out;
  std::thread poller([&] {
    v1::PollWorkflowTaskRequest r;
    r.mutable_task_queue()->set_name("nothing-here");
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(90));
    status = server.stub().PollWorkflowTask(&context, r, &out);
    answered = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_FALSE(answered) << "the poll should be parked: " << status.error_message();
  const auto before = std::chrono::steady_clock::now();
  EXPECT_EQ(server.terminate(), 0);
  poller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(5)) << "shutdown waited for the poll";
  EXPECT_TRUE(status.ok()) << "the parked poll is answered empty, not cut off: " << status.error_message();
  EXPECT_TRUE(out.task_token().empty());
}

}  // namespace
}  // namespace reprise
