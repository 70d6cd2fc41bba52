// Retention and deletion: the sweeper deletes closed runs past the retention
// period (and nothing else), DeleteWorkflowExecution deletes one now, and the
// blobs of deleted runs are collected while blobs a newer run still uses
// (a child's input, a continue-as-new input) are kept.
#include "../captured_stderr.hpp"
#include "engine/store/sqlite_db.hpp"
#include "engine_fixture.hpp"
#include "gated_store.hpp"
#include "history/payload.hpp"

namespace reprise::engine {
namespace {

constexpr auto kRetention = std::chrono::hours(1);

class RetentionTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    gate_ = std::make_unique<testing::GatedStore>(*store_);
    engine_store_ = gate_.get();
    restart([](EngineOptions& o) {
      o.retention = kRetention;
      o.retention_sweep_interval = std::chrono::hours(1);  // the tests sweep by hand unless they say
      o.claim_check.threshold = 1024;
    });
  }

  Result<v1::StartWorkflowResponse> start_on(const std::string& id, const std::string& queue,
                                             const std::string& input = "small",
                                             v1::WorkflowIdReusePolicy policy = {}) {
    v1::StartWorkflowRequest r;
    r.set_workflow_id(id);
    r.mutable_workflow_type()->set_name("hello");
    r.mutable_task_queue()->set_name(queue);
    r.mutable_input()->add_payloads()->set_data(input);
    r.set_request_id("start-" + id + "-" + input.substr(0, 8));
    r.set_workflow_id_reuse_policy(policy);
    return call(&Engine::start_workflow, r);
  }

  // Starts `id` on its own queue and completes it at once.
  void run_to_completion(const std::string& id) {
    ASSERT_TRUE(start_on(id, id).is_ok());
    auto task = poll_workflow(id);
    ASSERT_FALSE(task.task_token().empty());
    ASSERT_TRUE(complete(task.task_token(), {complete_with("done")}).is_ok());
  }

  Status describe(const std::string& id, const std::string& run_id = "") {
    v1::DescribeWorkflowRequest r;
    r.mutable_workflow_execution()->set_workflow_id(id);
    r.mutable_workflow_execution()->set_run_id(run_id);
    return call(&Engine::describe_workflow, r).status();
  }

  Result<v1::DeleteWorkflowExecutionResponse> delete_run(const std::string& id, const std::string& run_id = "") {
    v1::DeleteWorkflowExecutionRequest r;
    r.mutable_workflow_execution()->set_workflow_id(id);
    r.mutable_workflow_execution()->set_run_id(run_id);
    r.set_identity("test");
    return call(&Engine::delete_workflow_execution, r);
  }

  std::set<std::string> listed() {
    v1::ListWorkflowsRequest r;
    auto page = call(&Engine::list_workflows, r);
    EXPECT_TRUE(page.is_ok()) << page.status().to_string();
    std::set<std::string> ids;
    if (page.is_ok()) {
      for (const auto& e : page->executions()) ids.insert(e.execution().workflow_id());
    }
    return ids;
  }

  // Rows of `workflow_id` in every table that holds rows of a run.
  int64_t rows_of(const std::string& workflow_id) {
    auto db = SqliteDb::open_read_only(dir_.file("engine.db"));
    EXPECT_TRUE(db.is_ok()) << db.status().to_string();
    if (!db.is_ok()) return -1;
    int64_t total = 0;
    for (const char* table : {"executions", "history", "visibility", "current_runs", "tasks", "timers", "blob_refs"}) {
      auto s = (*db)->prepare_uncached(std::string("SELECT count(*) FROM ") + table + " WHERE workflow_id = ?1");
      EXPECT_TRUE(s.is_ok());
      if (!s.is_ok()) return -1;
      auto row = s->bind(1, workflow_id).step();
      EXPECT_TRUE(row.is_ok() && *row);
      total += s->column_int(0);
    }
    return total;
  }

  RetentionPass sweep() {
    auto pass = engine_->sweep_retention();
    EXPECT_TRUE(pass.is_ok()) << pass.status().to_string();
    return pass.is_ok() ? *pass : RetentionPass{};
  }

  // Blobs a collection with no grace period removes now.
  int64_t collected() {
    clock_.advance(std::chrono::seconds(1));
    auto gc = store_->blobs().collect_garbage(std::chrono::nanoseconds(0));
    EXPECT_TRUE(gc.is_ok()) << gc.status().to_string();
    return gc.is_ok() ? gc->blobs_deleted : -1;
  }
  bool stored(const v1::Payload& reference) {
    history::Sha256Digest digest{};
    return history::digest_from_bytes(reference.external().sha256(), digest) &&
           store_->blobs().stat(digest, "default").is_ok();
  }

  std::unique_ptr<testing::GatedStore> gate_;
};

TEST_F(RetentionTest, TheSweeperDeletesClosedRunsPastRetentionAndNothingElse) {
  run_to_completion("old");
  ASSERT_TRUE(start_on("running", "running").is_ok());
  clock_.advance(std::chrono::minutes(30));
  run_to_completion("recent");
  EXPECT_GT(rows_of("old"), 0);

  clock_.advance(std::chrono::minutes(30) + std::chrono::seconds(1));
  RetentionPass pass = sweep();
  EXPECT_EQ(pass.deleted, 1) << "only 'old' closed over an hour ago";
  EXPECT_EQ(describe("old").code(), StatusCode::kNotFound);
  v1::GetHistoryRequest history;
  history.mutable_workflow_execution()->set_workflow_id("old");
  EXPECT_EQ(call(&Engine::get_history, history).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(rows_of("old"), 0) << "state, history, visibility, current run, tasks, timers and blob refs all gone";
  EXPECT_EQ(listed(), (std::set<std::string>{"recent", "running"}));
  EXPECT_TRUE(describe("recent").is_ok()) << "closed 30 minutes ago: within retention";

  // The id is free: even a policy that refuses to reuse an id starts it.
  EXPECT_TRUE(start_on("old", "old", "again", v1::WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE).is_ok());

  clock_.advance(std::chrono::hours(24 * 30));
  pass = sweep();
  EXPECT_EQ(pass.deleted, 1) << "'recent' now; a running run is never deleted, however old";
  EXPECT_EQ(describe("recent").code(), StatusCode::kNotFound);
  EXPECT_TRUE(describe("running").is_ok());
  EXPECT_TRUE(describe("old").is_ok()) << "the new run of the id runs";
  EXPECT_EQ(sweep().deleted, 0);
}

// Deletions are logged (docs/engine.md, Logs): each run deleted on request
// at info with its ids, a retention pass as one count per namespace (its
// runs one by one only at debug).
TEST_F(RetentionTest, ADeletionOnRequestIsLoggedPerRunAndARetentionPassAsACount) {
  run_to_completion("asked");
  run_to_completion("swept-1");
  run_to_completion("swept-2");
  log::set_format(log::Format::kLogfmt);
  log::set_level(log::Level::kInfo);
  std::string asked_run;
  const std::string logged = ::reprise::testing::captured_stderr_of([&] {
    v1::DescribeWorkflowRequest d;
    d.mutable_workflow_execution()->set_workflow_id("asked");
    auto described = call(&Engine::describe_workflow, d);
    ASSERT_TRUE(described.is_ok()) << described.status().to_string();
    asked_run = described->info().execution().run_id();
    ASSERT_TRUE(delete_run("asked").is_ok());
    clock_.advance(kRetention + std::chrono::seconds(1));
    EXPECT_EQ(sweep().deleted, 2);
  });
  log::set_level(log::Level::kWarn);
  EXPECT_NE(logged.find("level=info msg=\"workflow deleted\" workflow_id=asked run_id=" + asked_run + " cause=request"),
            std::string::npos)
      << logged;
  EXPECT_NE(logged.find("level=info msg=\"retention deleted closed runs\" namespace=default runs=2 postponed=0 "),
            std::string::npos)
      << logged;
  EXPECT_EQ(logged.find("workflow_id=swept-"), std::string::npos) << "a pass's runs are counted, not listed\n"
                                                                  << logged;
}

TEST_F(RetentionTest, TheSweeperRunsByItselfInSmallBatches) {
  restart([](EngineOptions& o) {
    o.retention = kRetention;
    o.retention_sweep_interval = std::chrono::milliseconds(20);
    o.retention_batch = 2;  // five runs: three batches
  });
  for (int i = 0; i < 5; ++i) run_to_completion("batch-" + std::to_string(i));
  clock_.advance(kRetention + std::chrono::seconds(1));
  for (int i = 0; i < 500 && !listed().empty(); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(listed().empty());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(rows_of("batch-" + std::to_string(i)), 0);
}

TEST_F(RetentionTest, TheBlobOfADeletedRunIsCollectedByTheEnginesCollection) {
  restart([](EngineOptions& o) {
    o.retention = std::chrono::hours(3);
    o.retention_sweep_interval = std::chrono::hours(1);
    o.claim_check.threshold = 1024;
    o.blob_gc_interval = std::chrono::seconds(0);  // every 10 ms
    o.blob_gc_grace = std::chrono::hours(1);
  });
  ASSERT_TRUE(start_on("big", "big", std::string(4096, 'b')).is_ok());
  auto task = poll_workflow("big");
  const v1::Payload input = task.history().events(0).workflow_execution_started().input().payloads(0);
  ASSERT_TRUE(history::is_claim_check(input));
  ASSERT_TRUE(complete(task.task_token(), {complete_with("done")}).is_ok());

  clock_.advance(std::chrono::hours(2));  // past the grace: only the reference keeps it
  engine_->check_timers();
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(stored(input)) << "the closed run still references it";

  clock_.advance(std::chrono::hours(1) + std::chrono::seconds(1));
  EXPECT_EQ(sweep().deleted, 1);
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = !stored(input);
    if (!gone) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(gone) << "the engine's blob collection removed the deleted run's blob";
}

TEST_F(RetentionTest, ABlobTheNextRunUsesSurvivesTheDeletionOfTheRunThatContinuedAsNew) {
  ASSERT_TRUE(start_on("looper", "loop").is_ok());
  auto first = poll_workflow("loop");
  v1::Command again;
  again.set_command_type(v1::COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION);
  again.mutable_continue_as_new_workflow_execution()->mutable_input()->add_payloads()->set_data(std::string(4096, 'n'));
  ASSERT_TRUE(complete(first.task_token(), {again}).is_ok());
  auto second = poll_workflow("loop");
  ASSERT_NE(second.workflow_execution().run_id(), first.workflow_execution().run_id());
  const v1::Payload input = second.history().events(0).workflow_execution_started().input().payloads(0);
  ASSERT_TRUE(history::is_claim_check(input));

  clock_.advance(kRetention + std::chrono::seconds(1));
  EXPECT_EQ(sweep().deleted, 1) << "the first run, closed by continue-as-new; the second runs";
  EXPECT_EQ(describe("looper", first.workflow_execution().run_id()).code(), StatusCode::kNotFound);
  EXPECT_EQ(collected(), 0) << "the running run references the blob";
  EXPECT_TRUE(stored(input));
}

v1::Command start_child(const std::string& id, const std::string& input, v1::ParentClosePolicy policy) {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION);
  auto* a = c.mutable_start_child_workflow_execution();
  a->set_workflow_id(id);
  a->mutable_workflow_type()->set_name("shipping");
  a->mutable_task_queue()->set_name("kids");
  a->mutable_input()->add_payloads()->set_data(input);
  a->set_parent_close_policy(policy);
  return c;
}

TEST_F(RetentionTest, ABlobAChildUsesSurvivesTheDeletionOfItsParent) {
  ASSERT_TRUE(start_on("parent", "parents").is_ok());
  ASSERT_TRUE(complete(poll_workflow("parents").task_token(),
                       {start_child("kid", std::string(4096, 'k'), v1::PARENT_CLOSE_POLICY_ABANDON)})
                  .is_ok());
  auto kid = poll_workflow("kids");
  ASSERT_EQ(kid.workflow_execution().workflow_id(), "kid");
  const v1::Payload input = kid.history().events(0).workflow_execution_started().input().payloads(0);
  ASSERT_TRUE(history::is_claim_check(input));
  ASSERT_TRUE(complete(kid.task_token(), {}).is_ok());  // the child waits on
  auto parent = poll_workflow("parents");
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (complete(parent.task_token(), {complete_with("bye")}).is_ok()) break;
    parent = poll_workflow("parents");
  }
  ASSERT_EQ(wait_for_close("parent").event_type(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);

  clock_.advance(kRetention + std::chrono::seconds(1));
  EXPECT_EQ(sweep().deleted, 1) << "the parent; the abandoned child runs on";
  EXPECT_EQ(describe("parent").code(), StatusCode::kNotFound);
  EXPECT_TRUE(describe("kid").is_ok());
  EXPECT_EQ(collected(), 0) << "the running child references its input's blob";
  EXPECT_TRUE(stored(input));
}

TEST_F(RetentionTest, DeletingARunningRunTerminatesItFirstAndFreesTheId) {
  auto started = start_on("doomed", "doomed");
  ASSERT_TRUE(started.is_ok());
  auto deleted = delete_run("doomed");
  ASSERT_TRUE(deleted.is_ok()) << deleted.status().to_string();
  EXPECT_TRUE(deleted->terminated());
  EXPECT_EQ(deleted->run_id(), started->run_id());
  EXPECT_EQ(describe("doomed").code(), StatusCode::kNotFound);
  EXPECT_EQ(rows_of("doomed"), 0);
  EXPECT_EQ(delete_run("doomed").status().code(), StatusCode::kNotFound);

  auto again = start_on("doomed", "doomed", "again", v1::WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE);
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_TRUE(again->started());
  auto task = poll_workflow("doomed");
  ASSERT_EQ(task.workflow_execution().run_id(), again->run_id()) << "no task of the deleted run is handed out";
  ASSERT_TRUE(complete(task.task_token(), {complete_with("fine")}).is_ok());
  EXPECT_EQ(wait_for_close("doomed").event_type(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED);

  auto closed = delete_run("doomed", again->run_id());
  ASSERT_TRUE(closed.is_ok());
  EXPECT_FALSE(closed->terminated());
}

TEST_F(RetentionTest, ADeletedChildIsReportedToItsParentFirst) {
  // The child's history must be read through the gate's slow reads: not
  // from the execution cache, which keeps what this engine committed.
  restart([](EngineOptions& o) {
    o.retention = kRetention;
    o.retention_sweep_interval = std::chrono::hours(1);
    o.claim_check.threshold = 1024;
    o.execution_cache_entries = 0;
  });
  ASSERT_TRUE(start_on("mother", "parents").is_ok());
  ASSERT_TRUE(complete(poll_workflow("parents").task_token(),
                       {start_child("daughter", "small", v1::PARENT_CLOSE_POLICY_TERMINATE)})
                  .is_ok());
  auto kid = poll_workflow("kids");
  ASSERT_EQ(kid.workflow_execution().workflow_id(), "daughter");
  // The parent learns how its child closed from the child's history: slow
  // reads give the delete every chance to remove it first.
  gate_->slow_history_reads(300ms);
  auto deleted = delete_run("daughter");
  gate_->slow_history_reads(0ms);
  ASSERT_TRUE(deleted.is_ok()) << deleted.status().to_string();
  EXPECT_TRUE(deleted->terminated());

  v1::DescribeWorkflowRequest r;
  r.mutable_workflow_execution()->set_workflow_id("mother");
  auto mother = call(&Engine::describe_workflow, r);
  ASSERT_TRUE(mother.is_ok());
  EXPECT_EQ(mother->pending_children_size(), 0) << "the parent recorded the child's close before it was deleted";
  v1::GetHistoryRequest h;
  h.mutable_workflow_execution()->set_workflow_id("mother");
  auto events = call(&Engine::get_history, h);
  ASSERT_TRUE(events.is_ok());
  bool told = false;
  for (const auto& e : events->history().events()) told |= e.has_child_workflow_execution_terminated();
  EXPECT_TRUE(told);
}

}  // namespace
}  // namespace reprise::engine
