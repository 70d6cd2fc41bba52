// A full disk, for real: the store on a small tmpfs, filled by the test —
// a SQLite file there, or a PostgreSQL database in a tablespace there. Writes
// wait (and are reported, rate-limited) instead of failing, describe says
// why, and once space is back every acknowledged workflow goes on.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <random>

#include "../store/test_postgres.hpp"
#include "engine/store/postgres/postgres_store.hpp"
#include "engine_fixture.hpp"

namespace reprise::engine {
namespace {

enum class DiskFullStore { kSqlite, kPostgres };

// Bytes nothing compresses: a write of N of them needs N bytes of disk.
std::string incompressible_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::string bytes(n, '\0');
  for (char& c : bytes) c = static_cast<char>(random());
  return bytes;
}

class DiskFullTest : public ::testing::TestWithParam<DiskFullStore> {
 public:
  void SetUp() override {
    log::set_level(log::Level::kOff);  // the stall is what the reports below count
    if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root (CI runs the tests as root)";
    disk_ = dir_.file("disk");
    ASSERT_EQ(::mkdir(disk_.c_str(), 0755), 0) << std::strerror(errno);
    // PostgreSQL copies its template database (about 7.5 MiB) into the
    // tablespace first.
    const char* size = GetParam() == DiskFullStore::kSqlite ? "size=8m" : "size=16m";
    if (::mount("tmpfs", disk_.c_str(), "tmpfs", 0, size) != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
    }
    mounted_ = true;
    auto report = [this](const WriteStall& stall) {
      std::lock_guard lock(mu_);
      reports_.push_back(stall);
    };
    if (GetParam() == DiskFullStore::kSqlite) {
      StoreOptions options;
      options.on_write_stall = report;
      auto store = SqliteStore::open(disk_ + "/engine.db", options);
      ASSERT_TRUE(store.is_ok()) << store.status().to_string();
      queued_writes_ = [s = store->get()] { return s->queued_writes(); };
      store_ = std::move(store).value();
    } else {
      std::string why;
      postgres_ = testing::TestPostgres::get(&why);
      if (postgres_ == nullptr && testing::TestPostgres::required())
        FAIL() << "PostgreSQL is required under CI: " << why;
      if (postgres_ == nullptr) GTEST_SKIP() << "no PostgreSQL: " << why;
      const std::string tablespace = disk_ + "/pg";
      ASSERT_EQ(::mkdir(tablespace.c_str(), 0700), 0) << std::strerror(errno);
      // The postgres user reaches it through the test's own directory.
      ASSERT_EQ(::chmod(dir_.path().c_str(), 0711), 0) << std::strerror(errno);
      database_ = postgres_->new_database_in(tablespace, why);
      ASSERT_FALSE(database_.empty()) << why;
      PostgresStoreOptions options;
      options.on_write_stall = report;
      auto store = PostgresStore::open(database_, options);
      ASSERT_TRUE(store.is_ok()) << store.status().to_string();
      queued_writes_ = [s = store->get()] { return s->queued_writes(); };
      store_ = std::move(store).value();
    }
    EngineOptions engine_options;
    engine_options.poll_timeout = 300ms;
    auto engine = Engine::start(*store_, engine_options);
    ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
    engine_ = std::move(engine).value();
    if (GetParam() == DiskFullStore::kPostgres) {
      // A database in use, as autovacuum leaves it: its tables have pages,
      // and free space maps. (A table's first VACUUM must make its map, so
      // on a full disk it cannot, and the pages a failed try added stay
      // until more room is freed.)
      v1::StartWorkflowRequest warm_up;
      warm_up.set_workflow_id("warm-up");
      warm_up.mutable_workflow_type()->set_name("hello");
      warm_up.mutable_task_queue()->set_name("warm-up");
      warm_up.mutable_input()->add_payloads()->set_data(incompressible_bytes(96 << 10, 1));
      ASSERT_TRUE(call(&Engine::start_workflow, warm_up).is_ok());
      auto db = PgConnection::connect(database_);
      ASSERT_TRUE(db.is_ok()) << db.status().to_string();
      ASSERT_TRUE((*db)->exec("VACUUM").is_ok());
    }
  }
  void TearDown() override {
    engine_.reset();
    store_.reset();
    if (!database_.empty()) {
      EXPECT_TRUE(postgres_->drop_database_in(database_));
    }
    if (mounted_) ::umount2(disk_.c_str(), MNT_DETACH);
  }

  // Fills the disk, so that the next write must find room that is not there.
  void fill_disk() {
    if (GetParam() == DiskFullStore::kSqlite) {
      // An empty WAL: the next commits must grow it.
      auto db = SqliteDb::open(disk_ + "/engine.db", false, Durability::kFull);
      ASSERT_TRUE(db.is_ok());
      ASSERT_TRUE((*db)->exec("PRAGMA wal_checkpoint(TRUNCATE)").is_ok());
    }
    const int fd = ::open((disk_ + "/filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    const std::string block(64 << 10, 'f');
    while (::write(fd, block.data(), block.size()) > 0) {
    }
    ::close(fd);
  }
  void free_disk() { ASSERT_EQ(::unlink((disk_ + "/filler").c_str()), 0); }
  // Gives back only the filler's last `bytes`.
  void free_some(off_t bytes) {
    const std::string filler = disk_ + "/filler";
    struct stat st {};
    ASSERT_EQ(::stat(filler.c_str(), &st), 0) << std::strerror(errno);
    ASSERT_GT(st.st_size, bytes);
    ASSERT_EQ(::truncate(filler.c_str(), st.st_size - bytes), 0) << std::strerror(errno);
  }

  std::vector<WriteStall> reports() {
    std::lock_guard lock(mu_);
    return reports_;
  }

  template <typename Resp, typename Req>
  Result<Resp> call(void (Engine::*method)(Req, Reply<Resp>), Req request) {
    std::promise<Result<Resp>> done;
    (engine_.get()->*method)(std::move(request), [&done](Result<Resp> r) { done.set_value(std::move(r)); });
    return done.get_future().get();
  }
  v1::DescribeWorkflowResponse describe(const std::string& workflow_id) {
    v1::DescribeWorkflowRequest r;
    r.mutable_workflow_execution()->set_workflow_id(workflow_id);
    auto d = call(&Engine::describe_workflow, r);
    EXPECT_TRUE(d.is_ok()) << d.status().to_string();
    return d.is_ok() ? *d : v1::DescribeWorkflowResponse();
  }

 protected:
  testing::TempDir dir_;
  std::string disk_;
  bool mounted_ = false;
  testing::TestPostgres* postgres_ = nullptr;
  std::string database_;  // PostgreSQL's, in a tablespace on the disk
  std::mutex mu_;
  std::vector<WriteStall> reports_;
  std::unique_ptr<Store> store_;
  std::function<size_t()> queued_writes_;  // writes waiting for the store's writer
  std::unique_ptr<Engine> engine_;
};

INSTANTIATE_TEST_SUITE_P(BothStores, DiskFullTest, ::testing::Values(DiskFullStore::kSqlite, DiskFullStore::kPostgres),
                         [](const ::testing::TestParamInfo<DiskFullStore>& info) {
                           return info.param == DiskFullStore::kSqlite ? "Sqlite" : "Postgres";
                         });

// Near a full disk a commit can fail, free room and go through on its retry
// several times a second; the log hears of that once per 10 s, not twice per
// stall (it was about 6 lines a second).
TEST_P(DiskFullTest, ShortStallsInARowAreReportedOncePer10Seconds) {
  v1::StartWorkflowRequest start;
  start.set_workflow_id("wf");
  start.mutable_workflow_type()->set_name("hello");
  start.mutable_task_queue()->set_name("greetings");
  ASSERT_TRUE(call(&Engine::start_workflow, start).is_ok());
  for (int stall = 0; stall < 3; ++stall) {
    fill_disk();
    v1::SignalWorkflowRequest r;
    r.mutable_workflow_execution()->set_workflow_id("wf");
    r.set_signal_name("poke");
    r.mutable_input()->add_payloads()->set_data(incompressible_bytes(8 << 10, stall));
    auto answer = std::make_shared<std::promise<Status>>();
    auto signaled = answer->get_future();
    engine_->signal_workflow(r, [answer](Result<v1::SignalWorkflowResponse> out) { answer->set_value(out.status()); });
    std::this_thread::sleep_for(300ms);
    ASSERT_EQ(signaled.wait_for(0s), std::future_status::timeout) << "stall " << stall << " did not stall";
    free_disk();
    ASSERT_EQ(signaled.wait_for(15s), std::future_status::ready);
    EXPECT_TRUE(signaled.get().is_ok());
  }
  const auto lines = reports();
  ASSERT_EQ(lines.size(), 2u) << "the first stall's start and end; the two after it, within 10 s, are silent";
  EXPECT_TRUE(lines[0].stalled);
  EXPECT_FALSE(lines[1].stalled);
}

TEST_P(DiskFullTest, WritesWaitWhileTheDiskIsFullAndEveryAcknowledgedWorkflowGoesOnOnceSpaceIsBack) {
  constexpr int kWorkflows = 20;
  for (int i = 0; i < kWorkflows; ++i) {
    v1::StartWorkflowRequest r;
    r.set_workflow_id("wf-" + std::to_string(i));
    r.mutable_workflow_type()->set_name("hello");
    r.mutable_task_queue()->set_name("greetings");
    ASSERT_TRUE(call(&Engine::start_workflow, r).is_ok());
  }
  fill_disk();

  // Each signal needs room in the WAL: it waits rather than fails.
  std::vector<std::future<Status>> signaled;
  for (int i = 0; i < kWorkflows; ++i) {
    v1::SignalWorkflowRequest r;
    r.mutable_workflow_execution()->set_workflow_id("wf-" + std::to_string(i));
    r.set_signal_name("poke");
    r.mutable_input()->add_payloads()->set_data(incompressible_bytes(8 << 10, i));
    auto answer = std::make_shared<std::promise<Status>>();
    signaled.push_back(answer->get_future());
    engine_->signal_workflow(r, [answer](Result<v1::SignalWorkflowResponse> out) { answer->set_value(out.status()); });
  }
  std::this_thread::sleep_for(1500ms);
  for (auto& s : signaled) {
    ASSERT_EQ(s.wait_for(0s), std::future_status::timeout) << "failed instead of waiting: " << s.get().to_string();
  }
  const std::string problem = describe("wf-0").server_problem();
  EXPECT_NE(problem.find("cannot write"), std::string::npos) << "describe gives no hint: '" << problem << "'";
  EXPECT_NE(problem.find("full"), std::string::npos) << problem;
  // The same problem; its time and attempts may have moved on since.
  const std::string what = problem.substr(0, problem.find(" for "));
  EXPECT_EQ(engine_->server_problem().substr(0, what.size()), what);
  ASSERT_EQ(reports().size(), 1u) << "one report at the first failure, the next after 10 s";
  EXPECT_TRUE(reports()[0].stalled);

  free_disk();
  for (auto& s : signaled) {
    ASSERT_EQ(s.wait_for(15s), std::future_status::ready) << "a write still waits with space back";
    EXPECT_TRUE(s.get().is_ok());
  }
  EXPECT_EQ(describe("wf-0").server_problem(), "");
  ASSERT_GE(reports().size(), 2u);
  EXPECT_FALSE(reports().back().stalled) << "no report that writes go through again";

  // Every workflow started before the disk filled goes on to complete.
  for (int done = 0; done < kWorkflows;) {
    v1::PollWorkflowTaskRequest poll;
    poll.mutable_task_queue()->set_name("greetings");
    std::promise<Result<v1::PollWorkflowTaskResponse>> polled;
    engine_->poll_workflow_task(poll, [&polled](Result<v1::PollWorkflowTaskResponse> r) { polled.set_value(r); });
    auto task = polled.get_future().get();
    ASSERT_TRUE(task.is_ok()) << task.status().to_string();
    ASSERT_FALSE(task->task_token().empty()) << done << " of " << kWorkflows << " completed, then no task";
    v1::CompleteWorkflowTaskRequest complete;
    complete.set_task_token(task->task_token());
    auto* c = complete.add_commands();
    c->set_command_type(v1::COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION);
    c->mutable_complete_workflow_execution();
    ASSERT_TRUE(call(&Engine::complete_workflow_task, complete).is_ok());
    ++done;
  }
  for (int i = 0; i < kWorkflows; ++i) {
    EXPECT_EQ(describe("wf-" + std::to_string(i)).info().status(), v1::WORKFLOW_EXECUTION_STATUS_COMPLETED) << i;
  }
}

TEST_P(DiskFullTest, AShutdownDuringAStallEndsAtOnceAndAnswersWhatWaited) {
  v1::StartWorkflowRequest start;
  start.set_workflow_id("waiting");
  start.mutable_workflow_type()->set_name("hello");
  start.mutable_task_queue()->set_name("greetings");
  ASSERT_TRUE(call(&Engine::start_workflow, start).is_ok());
  fill_disk();
  v1::SignalWorkflowRequest r;
  r.mutable_workflow_execution()->set_workflow_id("waiting");
  r.set_signal_name("poke");
  r.mutable_input()->add_payloads()->set_data(incompressible_bytes(8 << 10, 0));
  auto answer = std::make_shared<std::promise<Status>>();
  auto signaled = answer->get_future();
  engine_->signal_workflow(r, [answer](Result<v1::SignalWorkflowResponse> out) { answer->set_value(out.status()); });
  for (int i = 0; i < 100 && engine_->server_problem().empty(); ++i) std::this_thread::sleep_for(20ms);
  ASSERT_FALSE(engine_->server_problem().empty()) << "the write did not stall";

  auto stopped = std::async(std::launch::async, [this] { engine_->shutdown(); });
  ASSERT_EQ(stopped.wait_for(10s), std::future_status::ready) << "shutdown waits for the disk";
  ASSERT_EQ(signaled.wait_for(0s), std::future_status::ready);
  EXPECT_FALSE(signaled.get().is_ok()) << "a write that never reached the disk is not acknowledged";
  free_disk();
}

// Space that comes back a little at a time goes to whatever fits: a batch too
// big for it is narrowed, so a few writes go through, and the rest wait.
TEST_P(DiskFullTest, WhenSpaceComesBackForAFewWritesThoseFewGoThroughWhileTheRestWait) {
  fill_disk();
  // A first write that stalls, so that everything after it queues behind it
  // and is taken as one batch once it goes through.
  v1::StartWorkflowRequest plug;
  plug.set_workflow_id("plug");
  plug.mutable_workflow_type()->set_name("hello");
  plug.mutable_task_queue()->set_name("greetings");
  // Big enough to need new pages on PostgreSQL, not just room in old ones.
  plug.mutable_input()->add_payloads()->set_data(incompressible_bytes(96 << 10, 2));
  auto plug_answer = std::make_shared<std::promise<Status>>();
  auto plugged = plug_answer->get_future();
  engine_->start_workflow(plug,
                          [plug_answer](Result<v1::StartWorkflowResponse> r) { plug_answer->set_value(r.status()); });
  for (int i = 0; i < 100 && engine_->server_problem().empty(); ++i) std::this_thread::sleep_for(20ms);
  ASSERT_FALSE(engine_->server_problem().empty()) << "the first write did not stall";

  // 24 starts of 96 KiB each (random, so nothing compresses them): together
  // 2.3 MB, far more than what is freed below.
  constexpr int kStarts = 24;
  std::vector<std::string> inputs;
  std::vector<std::future<Status>> started;
  for (int i = 0; i < kStarts; ++i) {
    std::string input = incompressible_bytes(96 << 10, 7 + i);
    v1::StartWorkflowRequest r;
    r.set_workflow_id("big-" + std::to_string(i));
    r.mutable_workflow_type()->set_name("hello");
    r.mutable_task_queue()->set_name("greetings");
    r.mutable_input()->add_payloads()->set_data(input);
    inputs.push_back(std::move(input));
    auto answer = std::make_shared<std::promise<Status>>();
    started.push_back(answer->get_future());
    engine_->start_workflow(r, [answer](Result<v1::StartWorkflowResponse> out) { answer->set_value(out.status()); });
  }
  for (int i = 0; i < 100 && queued_writes_() < kStarts; ++i) std::this_thread::sleep_for(20ms);
  ASSERT_EQ(queued_writes_(), static_cast<size_t>(kStarts)) << "the starts do not all wait behind the first";

  // Room for a few of them (each needs a little over 96 KiB in the WAL).
  free_some(512 << 10);
  ASSERT_EQ(plugged.wait_for(10s), std::future_status::ready) << "the first write still waits";
  EXPECT_TRUE(plugged.get().is_ok());
  auto acknowledged = [&] {
    int n = 0;
    for (auto& s : started) n += s.wait_for(0s) == std::future_status::ready ? 1 : 0;
    return n;
  };
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (acknowledged() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
  std::this_thread::sleep_for(500ms);  // whatever else fits
  const int early = acknowledged();
  ASSERT_GT(early, 0) << "none of " << kStarts << " starts went through with room for a few";
  EXPECT_LT(early, kStarts) << "all went through: the test freed too much to tell";
  std::vector<bool> was_early;
  for (auto& s : started) was_early.push_back(s.wait_for(0s) == std::future_status::ready);
  EXPECT_NE(engine_->server_problem(), "") << "the rest do not fit, and wait";

  free_disk();
  for (int i = 0; i < kStarts; ++i) {
    ASSERT_EQ(started[i].wait_for(20s), std::future_status::ready) << "big-" << i << " still waits with space back";
    EXPECT_TRUE(started[i].get().is_ok()) << "big-" << i;
  }
  // Every start is there with its whole input, the early ones included.
  for (int i = 0; i < kStarts; ++i) {
    v1::GetHistoryRequest r;
    r.mutable_workflow_execution()->set_workflow_id("big-" + std::to_string(i));
    std::promise<Result<v1::GetHistoryResponse>> got;
    engine_->get_history(r, [&got](Result<v1::GetHistoryResponse> h) { got.set_value(std::move(h)); });
    auto history = got.get_future().get();
    ASSERT_TRUE(history.is_ok()) << "big-" << i << (was_early[i] ? " (early)" : "") << ": "
                                 << history.status().to_string();
    ASSERT_GE(history->history().events_size(), 1);
    const auto& input = history->history().events(0).workflow_execution_started().input();
    ASSERT_EQ(input.payloads_size(), 1);
    EXPECT_TRUE(input.payloads(0).data() == inputs[i]) << "big-" << i << " has another input";
  }
  EXPECT_EQ(engine_->server_problem(), "");
}

}  // namespace
}  // namespace reprise::engine
