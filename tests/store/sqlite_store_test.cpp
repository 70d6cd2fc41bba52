#include "engine/store/sqlite_store.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <latch>

#include "store_under_test.hpp"

namespace reprise::engine {
namespace {

using testing::events;
using testing::key;
using testing::step;

// Every test runs on both stores (store_under_test.hpp).
class StoreTest : public testing::StoreFixture {
 protected:
  void SetUp() override {
    StoreFixture::SetUp();
    if (!IsSkipped() && !HasFatalFailure()) open();
  }
  void open(StoreOptions options = {}) {
    store_.reset();
    auto s = testing::open_any_store(db_, std::move(options));
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    store_ = std::move(*s);
  }
  Result<CommitResult> commit(Transition t) { return store_->commit(std::move(t)); }
  WriterStats writer_stats() { return testing::writer_stats_of(*store_); }

  std::unique_ptr<Store> store_;
};

INSTANTIATE_TEST_SUITE_P(BothStores, StoreTest,
                         ::testing::Values(testing::StoreKind::kSqlite, testing::StoreKind::kPostgres),
                         testing::store_kind_name);

Transition start(const ExecutionKey& k) {
  Transition t;
  t.executions.push_back(step(k, 1));
  t.current_runs.push_back(
      {{k.namespace_id, k.workflow_id, k.run_id, v1::WORKFLOW_EXECUTION_STATUS_RUNNING, "req-1"}, ""});
  t.add_tasks.push_back({0, TaskKind::kWorkflowTask, "orders", k, "wft"});
  t.add_timers.push_back({0, from_unix_nanos(5'000), k, "run-timeout"});
  t.visibility.push_back({k, "checkout", "orders", v1::WORKFLOW_EXECUTION_STATUS_RUNNING, from_unix_nanos(1'000), {}});
  return t;
}

TEST_P(StoreTest, StartTransitionIsReadBackWhole) {
  const auto k = key("order-1");
  Result<CommitResult> r = commit(start(k));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->versions, std::vector<int64_t>{1});
  ASSERT_EQ(r->task_ids.size(), 1u);
  ASSERT_EQ(r->timer_ids.size(), 1u);

  auto e = store_->get_execution(k);
  ASSERT_TRUE(e.is_ok());
  EXPECT_EQ(e->version, 1);
  EXPECT_EQ(e->next_event_id, 4);
  EXPECT_EQ(e->state, "v=1");

  auto run = store_->get_current_run("default", "order-1");
  ASSERT_TRUE(run.is_ok());
  EXPECT_EQ(run->run_id, "run-1");
  EXPECT_EQ(run->start_request_id, "req-1");

  auto h = store_->read_history(k, 1, 10);
  ASSERT_TRUE(h.is_ok());
  ASSERT_EQ(h->size(), 1u);
  history::EventBatchCodec codec;
  v1::History decoded;
  ASSERT_TRUE(codec.decode((*h)[0].data, decoded).is_ok());
  EXPECT_EQ(decoded.events_size(), 3);
  EXPECT_EQ(decoded.events(2).timer_started().timer_id(), "t3");

  auto tasks = store_->load_tasks(0, 10);
  ASSERT_EQ(tasks->size(), 1u);
  EXPECT_EQ((*tasks)[0].task_id, r->task_ids[0]);
  EXPECT_EQ((*tasks)[0].queue, "orders");
  EXPECT_EQ((*tasks)[0].execution, k);
  EXPECT_EQ((*tasks)[0].payload, "wft");

  EXPECT_EQ(**store_->next_timer_time(), from_unix_nanos(5'000));
  EXPECT_TRUE(store_->due_timers(from_unix_nanos(4'999), 10)->empty());
  EXPECT_EQ(store_->due_timers(from_unix_nanos(5'000), 10)->at(0).payload, "run-timeout");
}

TEST_P(StoreTest, StaleWriterLosesAndWritesNothing) {
  const auto k = key("order-2");
  ASSERT_TRUE(commit(start(k)).is_ok());
  Transition again = start(k);
  EXPECT_EQ(commit(again).status().code(), StatusCode::kAlreadyExists);

  Transition second;
  second.executions.push_back(step(k, 2));
  ASSERT_TRUE(commit(second).is_ok());

  Transition stale;
  stale.executions.push_back(step(k, 2));  // read version 1, but it is 2 now
  stale.add_tasks.push_back({0, TaskKind::kActivityTask, "orders", k, "must not appear"});
  Result<CommitResult> r = commit(stale);
  EXPECT_EQ(r.status().code(), StatusCode::kAborted);
  EXPECT_EQ(r.status().message(), "execution default/order-2/run-1 is at version 2, the writer expected 1");
  EXPECT_EQ(store_->load_tasks(0, 10)->size(), 1u) << "the stale transition's task was not written";
  EXPECT_EQ(store_->get_execution(k)->state, "v=2");
}

TEST_P(StoreTest, HistoryMustContinueWhereItEnded) {
  const auto k = key("order-3");
  ASSERT_TRUE(commit(start(k)).is_ok());
  Transition gap;
  ExecutionWrite w = step(k, 2);
  w.events = events(6, 2);  // next event is 4
  gap.executions.push_back(w);
  EXPECT_EQ(commit(gap).status().message(),
            "history batch for default/order-3/run-1 starts at event 6 but the next event is 4");

  Transition fresh_gap;
  ExecutionWrite create = step(key("order-4"), 1);
  create.events = events(2, 1);
  fresh_gap.executions.push_back(create);
  EXPECT_EQ(commit(fresh_gap).status().code(), StatusCode::kInvalidArgument);

  for (int n = 2; n <= 5; ++n) {
    Transition t;
    t.executions.push_back(step(k, n));
    ASSERT_TRUE(commit(t).is_ok());
  }
  // Reading from event 8 starts at the batch holding it (7..9).
  auto page = store_->read_history(k, 8, 2);
  ASSERT_EQ(page->size(), 2u);
  EXPECT_EQ((*page)[0].first_event_id, 7);
  EXPECT_EQ((*page)[1].last_event_id, 12);
  EXPECT_TRUE(store_->read_history(k, 16, 5)->empty());
}

TEST_P(StoreTest, CurrentRunIsConditional) {
  const CurrentRun first{"default", "wf", "run-a", v1::WORKFLOW_EXECUTION_STATUS_RUNNING, "r1"};
  Transition t1;
  t1.current_runs.push_back({first, ""});
  ASSERT_TRUE(commit(t1).is_ok());
  EXPECT_EQ(commit(t1).status().message(), "workflow id 'wf' already has a current run");

  CurrentRun next = first;
  next.run_id = "run-b";
  Transition wrong;
  wrong.current_runs.push_back({next, "run-x"});
  EXPECT_EQ(commit(wrong).status().code(), StatusCode::kAborted);
  Transition right;
  right.current_runs.push_back({next, "run-a"});
  ASSERT_TRUE(commit(right).is_ok());
  EXPECT_EQ(store_->get_current_run("default", "wf")->run_id, "run-b");
  EXPECT_EQ(store_->get_current_run("default", "nope").status().code(), StatusCode::kNotFound);
}

TEST_P(StoreTest, TasksAndTimersAreTakenExactlyOnce) {
  const auto k = key("order-5");
  Transition t;
  for (int i = 0; i < 3; ++i) t.add_tasks.push_back({0, TaskKind::kActivityTask, "q", k, std::to_string(i)});
  for (int i : {30, 10, 20}) t.add_timers.push_back({0, from_unix_nanos(i), k, std::to_string(i)});
  auto r = commit(t);
  ASSERT_TRUE(r.is_ok());
  EXPECT_LT(r->task_ids[0], r->task_ids[1]);
  EXPECT_LT(r->task_ids[1], r->task_ids[2]);

  auto due = store_->due_timers(from_unix_nanos(100), 2);
  ASSERT_EQ(due->size(), 2u);
  EXPECT_EQ((*due)[0].payload, "10");
  EXPECT_EQ((*due)[1].payload, "20");

  Transition take;
  take.remove_tasks.push_back(r->task_ids[1]);
  take.remove_timers.push_back((*due)[0].timer_id);
  ASSERT_TRUE(commit(take).is_ok());
  EXPECT_EQ(commit(take).status().code(), StatusCode::kAborted) << "a second taker loses";
  EXPECT_EQ(store_->load_tasks(r->task_ids[0], 10)->size(), 1u);

  // Ids are never reused, even after deletion.
  Transition more;
  more.add_tasks.push_back({0, TaskKind::kActivityTask, "q", k, "late"});
  Transition drop;
  drop.remove_tasks.push_back(r->task_ids[2]);
  ASSERT_TRUE(commit(drop).is_ok());
  EXPECT_GT(commit(more)->task_ids[0], r->task_ids[2]);
}

TEST_P(StoreTest, GroupCommitBatchesAndIsolatesFailures) {
  // Hold the first batch at its commit until every other transition is
  // queued, so the rest must share the second batch.
  std::latch queued(1);
  std::atomic<int> calls{0};
  StoreOptions options;
  options.fault_hook = [&](FaultPoint p) {
    if (p == FaultPoint::kBeforeCommit && calls++ == 0) queued.wait();
    return Status::ok();
  };
  open(std::move(options));

  constexpr int kCount = 40;
  std::vector<std::future<Result<CommitResult>>> results;
  for (int i = 0; i < kCount; ++i) {
    auto done = std::make_shared<std::promise<Result<CommitResult>>>();
    results.push_back(done->get_future());
    // Every fifth transition conflicts with the first one's execution.
    const auto k = key(i % 5 == 0 && i > 0 ? "wf-0" : "wf-" + std::to_string(i));
    Transition t;
    t.executions.push_back(step(k, 1));
    t.add_tasks.push_back({0, TaskKind::kWorkflowTask, "q", k, std::to_string(i)});
    store_->commit_async(std::move(t), [done](Result<CommitResult> r) { done->set_value(std::move(r)); });
  }
  queued.count_down();

  int ok = 0;
  for (int i = 0; i < kCount; ++i) {
    Result<CommitResult> r = results[i].get();
    if (i % 5 == 0 && i > 0) {
      EXPECT_EQ(r.status().code(), StatusCode::kAlreadyExists) << i;
    } else {
      EXPECT_TRUE(r.is_ok()) << i << ": " << r.status().to_string();
      ++ok;
    }
  }
  EXPECT_EQ(store_->load_tasks(0, 100)->size(), static_cast<size_t>(ok));
  const auto stats = writer_stats();
  EXPECT_EQ(stats.transitions, ok);
  EXPECT_LE(stats.batches, 2) << "40 transitions shared at most two commits";
}

TEST_P(StoreTest, FailedCommitFailsTheWholeBatch) {
  // The first batch is held at its commit until five transitions are queued
  // behind it: they make the second batch, whose commit fails.
  std::latch holding(1), queued(1);
  std::atomic<int> commits{0};
  StoreOptions options;
  options.fault_hook = [&](FaultPoint p) {
    if (p != FaultPoint::kBeforeCommit) return Status::ok();
    const int n = commits++;
    if (n == 0) {
      holding.count_down();
      queued.wait();
    }
    return n == 1 ? Status::unavailable("injected commit failure") : Status::ok();
  };
  open(std::move(options));
  std::promise<Result<CommitResult>> first;
  store_->commit_async(start(key("first")), [&](Result<CommitResult> r) { first.set_value(std::move(r)); });
  holding.wait();
  constexpr int kBatch = 5;
  std::vector<std::future<Result<CommitResult>>> results;
  for (int i = 0; i < kBatch; ++i) {
    auto done = std::make_shared<std::promise<Result<CommitResult>>>();
    results.push_back(done->get_future());
    store_->commit_async(start(key("b-" + std::to_string(i))),
                         [done](Result<CommitResult> r) { done->set_value(std::move(r)); });
  }
  queued.count_down();
  ASSERT_TRUE(first.get_future().get().is_ok());
  for (int i = 0; i < kBatch; ++i) {
    EXPECT_EQ(results[i].get().status().message(), "injected commit failure") << "b-" << i;
    EXPECT_EQ(store_->get_execution(key("b-" + std::to_string(i))).status().code(), StatusCode::kNotFound);
  }
  EXPECT_EQ(commits.load(), 2) << "the five shared one commit";
  EXPECT_EQ(writer_stats().transitions, 1);
  ASSERT_TRUE(commit(start(key("b-0"))).is_ok()) << "a retry after the failure succeeds";
}

TEST_P(StoreTest, ListExecutionsFiltersAndPages) {
  for (int i = 0; i < 25; ++i) {
    const auto k = key("wf-" + std::to_string(i));
    Transition t;
    VisibilityRecord v{
        k, i % 2 ? "odd" : "even", "q", v1::WORKFLOW_EXECUTION_STATUS_RUNNING, from_unix_nanos(1'000 + i / 3), {}};
    if (i % 5 == 0) {
      v.status = v1::WORKFLOW_EXECUTION_STATUS_COMPLETED;
      v.close_time = from_unix_nanos(9'000);
    }
    t.visibility.push_back(v);
    ASSERT_TRUE(commit(t).is_ok());
  }
  VisibilityQuery q;
  q.namespace_id = "default";
  q.page_size = 10;
  std::vector<std::string> seen;
  int pages = 0;
  do {
    auto page = store_->list_executions(q);
    ASSERT_TRUE(page.is_ok()) << page.status().to_string();
    for (const auto& r : page->records) seen.push_back(r.key.workflow_id);
    q.page_token = page->next_page_token;
    ++pages;
  } while (!q.page_token.empty());
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(seen.size(), 25u);
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), 25u) << "no record twice across pages";
  EXPECT_EQ(seen.front(), "wf-24");  // newest start first

  VisibilityQuery odd_closed;
  odd_closed.namespace_id = "default";
  odd_closed.workflow_type = "odd";
  odd_closed.status = v1::WORKFLOW_EXECUTION_STATUS_COMPLETED;
  auto r = store_->list_executions(odd_closed);
  ASSERT_EQ(r->records.size(), 2u);  // wf-15, wf-5
  EXPECT_EQ(r->records[0].key.workflow_id, "wf-15");
  EXPECT_EQ(*r->records[0].close_time, from_unix_nanos(9'000));

  VisibilityQuery range;
  range.namespace_id = "default";
  range.started_after = from_unix_nanos(1'002);
  range.started_before = from_unix_nanos(1'004);
  EXPECT_EQ(store_->list_executions(range)->records.size(), 6u);  // wf-6 .. wf-11

  VisibilityQuery prefix;
  prefix.namespace_id = "default";
  prefix.workflow_id_prefix = "wf-1";
  std::vector<std::string> prefixed;
  // The page is held while the loop runs: a range-for over a member of the
  // Result temporary would read it after its destruction.
  const Result<VisibilityPage> prefix_page = store_->list_executions(prefix);
  ASSERT_TRUE(prefix_page.is_ok()) << prefix_page.status().to_string();
  for (const auto& rec : prefix_page->records) prefixed.push_back(rec.key.workflow_id);
  EXPECT_EQ(prefixed.size(), 11u);  // wf-1, wf-10 .. wf-19
  for (const std::string& id : prefixed) EXPECT_EQ(id.rfind("wf-1", 0), 0u) << id;
  prefix.page_size = 4;
  prefix.page_token = store_->list_executions(prefix)->next_page_token;
  EXPECT_EQ(store_->list_executions(prefix)->records.front().key.workflow_id, "wf-15")
      << "the prefix holds across pages";

  VisibilityQuery bad;
  bad.namespace_id = "default";
  bad.page_token = "zz";
  EXPECT_EQ(store_->list_executions(bad).status().message(), "malformed page_token");
}

TEST_P(StoreTest, DeletingAnExecutionRemovesEverythingOfIt) {
  const auto k = key("gone");
  const auto other = key("stays");
  ASSERT_TRUE(commit(start(k)).is_ok());
  ASSERT_TRUE(commit(start(other)).is_ok());
  Transition del;
  del.delete_executions.push_back(k);
  ASSERT_TRUE(commit(del).is_ok());
  EXPECT_EQ(store_->get_execution(k).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store_->read_history(k, 1, 10)->empty());
  EXPECT_EQ(store_->get_current_run("default", "gone").status().code(), StatusCode::kNotFound);
  auto tasks = store_->load_tasks(0, 10);
  ASSERT_EQ(tasks->size(), 1u);
  EXPECT_EQ((*tasks)[0].execution, other);
  EXPECT_EQ(store_->due_timers(from_unix_nanos(1'000'000), 10)->size(), 1u);
}

// A run deleted right after it closed (or terminated on a delete request)
// still owes others its transfer tasks: the parent-close policies for its
// children above all. Those rows stay, and go when they have been carried out.
TEST_P(StoreTest, DeletingAnExecutionKeepsItsTransferRows) {
  const auto k = key("parent");
  ASSERT_TRUE(commit(start(k)).is_ok());
  Transition policy;
  TaskRecord transfer;
  transfer.kind = TaskKind::kTransfer;
  transfer.execution = k;
  transfer.payload = "terminate the child";
  policy.add_tasks.push_back(transfer);
  ASSERT_TRUE(commit(policy).is_ok());
  Transition del;
  del.delete_executions.push_back(k);
  ASSERT_TRUE(commit(del).is_ok());
  EXPECT_EQ(store_->get_execution(k).status().code(), StatusCode::kNotFound);
  auto tasks = store_->load_tasks(0, 10);
  ASSERT_TRUE(tasks.is_ok()) << tasks.status().to_string();
  ASSERT_EQ(tasks->size(), 1u) << "the workflow task goes, the transfer row stays";
  EXPECT_EQ((*tasks)[0].kind, TaskKind::kTransfer);
  EXPECT_EQ((*tasks)[0].execution, k);
  EXPECT_EQ((*tasks)[0].payload, "terminate the child");
}

TEST_P(StoreTest, ClosedRunsComeOldestCloseFirstAndPageOnPastTheLastOne) {
  // Closed at 100, 100, 300, 400 (wf-1 .. wf-4); wf-0 runs.
  const int64_t closed_at[] = {0, 100, 100, 300, 400};
  for (int i = 0; i < 5; ++i) {
    Transition t;
    VisibilityRecord v{
        key("wf-" + std::to_string(i)), "t", "q", v1::WORKFLOW_EXECUTION_STATUS_RUNNING, from_unix_nanos(10), {}};
    if (closed_at[i] > 0) {
      v.status = v1::WORKFLOW_EXECUTION_STATUS_COMPLETED;
      v.close_time = from_unix_nanos(closed_at[i]);
    }
    t.visibility.push_back(v);
    ASSERT_TRUE(commit(t).is_ok());
  }
  auto first = store_->closed_runs("default", from_unix_nanos(400), std::nullopt, 2);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ((*first)[0].key.workflow_id, "wf-1");
  EXPECT_EQ((*first)[1].key.workflow_id, "wf-2");
  EXPECT_EQ((*first)[1].close_time, from_unix_nanos(100));
  auto rest = store_->closed_runs("default", from_unix_nanos(400), first->back(), 2);
  ASSERT_TRUE(rest.is_ok());
  ASSERT_EQ(rest->size(), 1u) << "wf-4 closed at the cutoff, not before it; wf-0 is running";
  EXPECT_EQ((*rest)[0].key.workflow_id, "wf-3");
  EXPECT_TRUE(store_->closed_runs("default", from_unix_nanos(400), rest->back(), 2)->empty());
}

TEST_P(StoreTest, CommittedDataSurvivesReopening) {
  const auto k = key("durable");
  ASSERT_TRUE(commit(start(k)).is_ok());
  open();
  EXPECT_EQ(store_->get_execution(k)->version, 1);
  EXPECT_EQ(store_->load_tasks(0, 10)->size(), 1u);
}

TEST_P(StoreTest, ReferencingAMissingBlobFailsTheTransition) {
  const auto k = key("refs");
  Transition t = start(k);
  t.add_blob_refs.push_back({history::Sha256::digest("never stored"), k});
  Result<CommitResult> r = commit(t);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("is not in the blob store"), std::string::npos);
  EXPECT_EQ(store_->get_execution(k).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace reprise::engine
