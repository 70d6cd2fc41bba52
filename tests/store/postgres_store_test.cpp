// What only the PostgreSQL store has: its database argument, a database that
// is not Reprise's, the shard column, servers opening one new database at
// once, and both group-commit shapes. The Store contract itself is tested on
// both stores by sqlite_store_test.cpp and crash_test.cpp.
#include "engine/store/postgres/postgres_store.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <future>
#include <latch>
#include <thread>

#include "child_process.hpp"
#include "engine/store/backup.hpp"
#include "engine/store/file_check.hpp"
#include "store_test_util.hpp"
#include "test_postgres.hpp"

namespace reprise::engine {
namespace {

using testing::key;
using testing::step;

Result<PgResult> sql(const std::string& url, const std::string& statement) {
  auto db = PgConnection::connect(url);
  if (!db) return db.status();
  return (*db)->query(statement);
}

TEST(PostgresStore, ADatabaseHoldingOtherTablesIsRefusedAndLeftAlone) {
  REPRISE_POSTGRES_DATABASE(url);
  ASSERT_TRUE(sql(url, "CREATE TABLE invoices (id BIGINT)").is_ok());
  auto store = PostgresStore::open(url);
  ASSERT_FALSE(store.is_ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("is not a Reprise database: it holds 1 tables and no reprise_meta"),
            std::string::npos)
      << store.status().message();
  auto tables = sql(url, "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'");
  ASSERT_TRUE(tables.is_ok());
  EXPECT_EQ(tables->get_int(0, 0), 1) << "nothing was created beside the other program's table";
}

TEST(PostgresStore, ANewerSchemaIsRefused) {
  REPRISE_POSTGRES_DATABASE(url);
  ASSERT_TRUE(PostgresStore::open(url).is_ok());
  ASSERT_TRUE(sql(url, "UPDATE reprise_meta SET value = '99' WHERE key = 'schema_version'").is_ok());
  auto store = PostgresStore::open(url);
  ASSERT_FALSE(store.is_ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("has schema version 99, newer than the version"), std::string::npos)
      << store.status().message();
}

TEST(PostgresStore, AnUnreachableServerIsUnavailableAndThePasswordIsNotShown) {
  // Port 1 on loopback: nothing listens there.
  auto store = PostgresStore::open("postgresql://reprise:s3cret@127.0.0.1:1/reprise?connect_timeout=2");
  ASSERT_FALSE(store.is_ok());
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(store.status().message().find("postgresql://reprise:***@127.0.0.1:1/reprise"), std::string::npos)
      << store.status().message();
  EXPECT_EQ(store.status().message().find("s3cret"), std::string::npos);
}

TEST(PostgresStore, TheShardCountIsFixedWhenTheDatabaseIsCreatedAndEveryRowCarriesItsShard) {
  REPRISE_POSTGRES_DATABASE(url);
  const ExecutionKey k = key("sharded");
  {
    auto store = PostgresStore::open(url, PostgresStoreOptions{.shard_count = 16});
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    EXPECT_TRUE((*store)->open_report().created);
    EXPECT_EQ((*store)->open_report().shard_count, 16);
  }
  auto store = PostgresStore::open(url, PostgresStoreOptions{.shard_count = 512});
  ASSERT_TRUE(store.is_ok());
  EXPECT_FALSE((*store)->open_report().created);
  EXPECT_EQ((*store)->open_report().shard_count, 16) << "an existing database keeps its shard count";
  Transition t;
  t.executions.push_back(step(k, 1));
  t.current_runs.push_back({{k.namespace_id, k.workflow_id, k.run_id, v1::WORKFLOW_EXECUTION_STATUS_RUNNING, "r"}, ""});
  t.add_tasks.push_back({0, TaskKind::kWorkflowTask, "q", k, "task"});
  t.add_timers.push_back({0, from_unix_nanos(1), k, "timer"});
  ASSERT_TRUE((*store)->commit(t).is_ok());
  const int64_t expected = shard_of(k.namespace_id, k.workflow_id, 16);
  for (const char* table : {"executions", "current_runs", "history", "tasks", "timers"}) {
    auto shards = sql(url, std::string("SELECT min(shard_id), max(shard_id), count(*) FROM ") + table);
    ASSERT_TRUE(shards.is_ok()) << table;
    EXPECT_EQ(shards->get_int(0, 2), 1) << table;
    EXPECT_EQ(shards->get_int(0, 0), expected) << table;
    EXPECT_EQ(shards->get_int(0, 1), expected) << table;
  }
}

TEST(PostgresStore, ServersOpeningANewDatabaseAtOnceCreateItOnceAndShareTheirKeys) {
  REPRISE_POSTGRES_DATABASE(url);
  constexpr int kServers = 4;
  std::latch go(kServers);
  std::vector<std::future<Result<std::unique_ptr<PostgresStore>>>> opened;
  for (int i = 0; i < kServers; ++i) {
    opened.push_back(std::async(std::launch::async, [&] {
      go.arrive_and_wait();
      return PostgresStore::open(url);
    }));
  }
  int created = 0;
  std::vector<std::vector<TaskTokenKey>> keys;
  for (auto& f : opened) {
    auto store = f.get();
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    created += (*store)->open_report().created ? 1 : 0;
    keys.push_back((*store)->task_token_keys());
  }
  EXPECT_EQ(created, 1);
  for (const auto& k : keys) {
    ASSERT_EQ(k.size(), 1u);
    EXPECT_EQ(k[0].secret, keys[0][0].secret) << "every server signs task tokens with the same key";
  }
}

// A batch with conflicts gives each transition the same answer in both
// shapes: the pipelined one runs the batch again with savepoints.
TEST(PostgresStore, BothCommitShapesIsolateAFailedConditionToItsTransition) {
  for (PgCommitShape shape : {PgCommitShape::kPipelined, PgCommitShape::kSavepoints}) {
    REPRISE_POSTGRES_DATABASE(url);
    SCOPED_TRACE(shape == PgCommitShape::kPipelined ? "pipelined" : "savepoints");
    std::latch holding(1), queued(1);
    std::atomic<int> calls{0};
    PostgresStoreOptions options;
    options.commit_shape = shape;
    options.fault_hook = [&](FaultPoint p) {
      if (p == FaultPoint::kBeforeCommit && calls++ == 0) {
        holding.count_down();
        queued.wait();
      }
      return Status::ok();
    };
    auto store = PostgresStore::open(url, options);
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    std::vector<std::future<Result<CommitResult>>> results;
    auto submit = [&](Transition t) {
      auto done = std::make_shared<std::promise<Result<CommitResult>>>();
      results.push_back(done->get_future());
      (*store)->commit_async(std::move(t), [done](Result<CommitResult> r) { done->set_value(std::move(r)); });
    };
    Transition first;
    first.executions.push_back(step(key("a"), 1));
    submit(first);  // held at its commit while the rest queue up behind it
    holding.wait();
    Transition second_a;
    second_a.executions.push_back(step(key("a"), 2));
    Transition stale_a;
    stale_a.executions.push_back(step(key("a"), 2));  // read version 1 too: loses to second_a
    // No history, so nothing but the version check can stop it.
    stale_a.executions.back().events.reset();
    stale_a.add_tasks.push_back({0, TaskKind::kWorkflowTask, "q", key("a"), "must not appear"});
    Transition b;
    b.executions.push_back(step(key("b"), 1));
    b.add_tasks.push_back({0, TaskKind::kWorkflowTask, "q", key("b"), "b"});
    submit(second_a);
    submit(stale_a);
    submit(b);
    queued.count_down();
    ASSERT_TRUE(results[0].get().is_ok());
    ASSERT_TRUE(results[1].get().is_ok());
    Result<CommitResult> stale = results[2].get();
    EXPECT_EQ(stale.status().message(), "execution default/a/run-1 is at version 2, the writer expected 1");
    Result<CommitResult> rb = results[3].get();
    ASSERT_TRUE(rb.is_ok()) << rb.status().to_string();
    ASSERT_EQ(rb->task_ids.size(), 1u);
    auto tasks = (*store)->load_tasks(0, 10);
    ASSERT_TRUE(tasks.is_ok());
    ASSERT_EQ(tasks->size(), 1u) << "the stale transition wrote nothing";
    EXPECT_EQ((*tasks)[0].task_id, rb->task_ids[0]);
    EXPECT_EQ((*store)->writer_stats().batches, 2) << "the three after the first shared one commit";
  }
}

// Blobs in bytea chunks behind the BlobStore interface: streamed both ways,
// stored once, readable only in their namespaces, collected when nothing
// references them.
TEST(PostgresStore, BlobsStreamInChunksDeduplicateAndAreCollectedWhenUnreferenced) {
  REPRISE_POSTGRES_DATABASE(url);
  ManualClock clock;
  PostgresStoreOptions options;
  options.clock = &clock;
  options.blobs.chunk_bytes = 64 << 10;
  options.blobs.write_batch_bytes = 256 << 10;
  auto store = PostgresStore::open(url, options);
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  BlobStore& blobs = (*store)->blobs();

  std::string data(3'000'000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 131) ^ (i >> 9));
  auto writer = blobs.begin_put("default");
  ASSERT_TRUE(writer.is_ok());
  for (size_t at = 0; at < data.size(); at += 77'777) {
    ASSERT_TRUE((*writer)->write(std::string_view(data).substr(at, 77'777)).is_ok());
  }
  auto kept = (*writer)->finish();
  ASSERT_TRUE(kept.is_ok()) << kept.status().to_string();
  EXPECT_EQ(kept->sha256, history::Sha256::digest(data));
  auto chunks = sql(url, "SELECT count(*) FROM blob_chunks");
  EXPECT_EQ(chunks->get_int(0, 0), (3'000'000 + (64 << 10) - 1) / (64 << 10));
  auto back = blobs.get(kept->sha256, "default", 10'000'000);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_TRUE(*back == data);

  auto again = blobs.put(data, "default");
  ASSERT_TRUE(again.is_ok());
  EXPECT_TRUE(again->deduplicated);
  EXPECT_EQ(sql(url, "SELECT count(*) FROM blobs")->get_int(0, 0), 1) << "the same bytes are stored once";
  EXPECT_EQ(blobs.stat(kept->sha256, "elsewhere").status().code(), StatusCode::kNotFound)
      << "a blob is not readable from a namespace it was never uploaded in";

  auto loose = blobs.put("nobody refers to me", "default");
  ASSERT_TRUE(loose.is_ok());
  const ExecutionKey k = key("holder");
  Transition t;
  t.executions.push_back(step(k, 1));
  t.add_blob_refs.push_back({kept->sha256, k});
  ASSERT_TRUE((*store)->commit(t).is_ok());
  clock.advance(std::chrono::hours(2));
  auto gc = blobs.collect_garbage(std::chrono::hours(1), {});
  ASSERT_TRUE(gc.is_ok()) << gc.status().to_string();
  EXPECT_EQ(gc->blobs_deleted, 1);
  EXPECT_TRUE(blobs.stat(kept->sha256, "default").is_ok()) << "a referenced blob stays";
  EXPECT_EQ(blobs.stat(loose->sha256, "default").status().code(), StatusCode::kNotFound);
}

TEST(PostgresStore, TheSqliteFileToolsNameAPostgresUrlInsteadOfLookingForAFile) {
  auto checked = check_database_file("postgresql://reprise@db.example/reprise", true);
  ASSERT_FALSE(checked.is_ok());
  EXPECT_NE(checked.status().message().find("is a PostgreSQL database"), std::string::npos);
  EXPECT_NE(checked.status().message().find("pg_amcheck"), std::string::npos);
  auto copied = backup_database("postgresql://reprise@db.example/reprise", "/tmp/never-written.db", false);
  ASSERT_FALSE(copied.is_ok());
  EXPECT_NE(copied.status().message().find("pg_dump"), std::string::npos);
}

// The PostgreSQL a test binary starts goes when the binary is killed (-9, as
// a timeout kills it): left running, it would hold its port, its memory and
// its temporary directory until someone killed it by hand.
TEST(TestPostgres, ItsPostgresqlStopsWhenTheTestProcessIsKilled) {
  REPRISE_POSTGRES_DATABASE(url);  // PostgreSQL is here (or the test skips)
  ASSERT_FALSE(testing::store_child_path().empty()) << "REPRISE_STORE_CHILD is not set";
  testing::ChildProcess child({testing::store_child_path(), "postgres", "own"});
  ASSERT_TRUE(child.started());
  std::string line;
  ASSERT_TRUE(child.read_line(line));
  ASSERT_EQ(line.rfind("postgres ", 0), 0u) << line;
  const pid_t postmaster = std::stoi(line.substr(9));
  ASSERT_GT(postmaster, 0);
  child.kill(SIGKILL);
  child.wait();
  // Gone, or a zombie nobody has reaped yet.
  auto running = [postmaster] {
    std::ifstream stat("/proc/" + std::to_string(postmaster) + "/stat");
    std::string pid, name, state;
    return stat >> pid >> name >> state && state != "Z";
  };
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (running() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const bool left_running = running();
  if (left_running) ::kill(postmaster, SIGQUIT);  // not left behind by this test either
  EXPECT_FALSE(left_running) << "PostgreSQL " << postmaster << " outlived the process that started it";
}

}  // namespace
}  // namespace reprise::engine
