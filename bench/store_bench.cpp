// Store throughput: state transitions/s through the group-commit writer at
// batch sizes 1, 8 and 64 (that many transitions in flight, at most that many
// per SQLite transaction), and blob put/get MB/s. With
// REPRISE_BENCH_POSTGRES=postgresql://... (an empty database, emptied again
// by each run) also the PostgreSQL store's transitions, in both group-commit
// shapes.
//   ./run bench Store      (or build-release/bench/store_bench)
#include <benchmark/benchmark.h>

#include <condition_variable>
#include <mutex>

#include "engine/store/postgres/postgres_store.hpp"
#include "engine/store/sqlite_store.hpp"
#include "store_test_util.hpp"

namespace reprise::engine {
namespace {

using testing::TempDir;

// A "start workflow" transition: new execution with its first events, a
// workflow task, a run-timeout timer, a visibility row and the current run.
Transition start_transition(int64_t n, const HistoryBatch& first_events) {
  char id[32];
  std::snprintf(id, sizeof id, "wf-%012lld", static_cast<long long>(n));
  const ExecutionKey k{"default", id, "run-1"};
  Transition t;
  ExecutionWrite w;
  w.key = k;
  w.state = std::string(200, 's');
  w.events = first_events;
  t.executions.push_back(std::move(w));
  t.current_runs.push_back({{k.namespace_id, k.workflow_id, k.run_id, v1::WORKFLOW_EXECUTION_STATUS_RUNNING, "r"}, ""});
  t.add_tasks.push_back({0, TaskKind::kWorkflowTask, "bench", k, std::string(64, 't')});
  t.add_timers.push_back({0, from_unix_nanos(n), k, "run-timeout"});
  t.visibility.push_back({k, "bench", "bench", v1::WORKFLOW_EXECUTION_STATUS_RUNNING, from_unix_nanos(n), {}});
  return t;
}

// Keeps `window` commits in flight.
class InFlight {
 public:
  explicit InFlight(int window) : window_(window) {}
  void acquire() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return pending_ < window_; });
    ++pending_;
  }
  void release(bool ok) {
    std::lock_guard lock(mu_);
    --pending_;
    failures_ += ok ? 0 : 1;
    cv_.notify_all();
  }
  int drain() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return pending_ == 0; });
    return failures_;
  }

 private:
  const int window_;
  std::mutex mu_;
  std::condition_variable cv_;
  int pending_ = 0;
  int failures_ = 0;
};

void BM_StoreTransitions(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0));
  TempDir dir;
  StoreOptions options;
  options.max_batch = batch;
  options.durability = state.range(1) != 0 ? Durability::kFull : Durability::kNormal;
  auto store = SqliteStore::open(dir.file("bench.db"), options);
  if (!store) {
    state.SkipWithError(store.status().to_string().c_str());
    return;
  }
  const HistoryBatch first_events = testing::events(1, 3);
  InFlight in_flight(batch);
  int64_t n = 0;
  for (auto _ : state) {
    in_flight.acquire();
    (*store)->commit_async(start_transition(n++, first_events),
                           [&in_flight](Result<CommitResult> r) { in_flight.release(r.is_ok()); });
  }
  if (in_flight.drain() != 0) state.SkipWithError("a commit failed");
  const auto stats = (*store)->writer_stats();
  state.SetItemsProcessed(state.iterations());
  state.counters["per_commit"] = static_cast<double>(stats.transitions) / static_cast<double>(stats.batches);
}
// Args: batch size, durability (1 = kFull, fsync per commit; 0 = kNormal).
BENCHMARK(BM_StoreTransitions)
    ->ArgNames({"batch", "full"})
    ->ArgsProduct({{1, 8, 64}, {1, 0}})
    ->UseRealTime()
    ->MinTime(2.0);

// The PostgreSQL store: the database of REPRISE_BENCH_POSTGRES, its tables
// dropped first so every run starts empty.
void BM_PostgresTransitions(benchmark::State& state) {
  const char* url = std::getenv("REPRISE_BENCH_POSTGRES");
  if (url == nullptr) {
    state.SkipWithError("REPRISE_BENCH_POSTGRES is not set");
    return;
  }
  {
    auto admin = PgConnection::connect(url);
    if (!admin || !(*admin)->exec("DROP SCHEMA public CASCADE; CREATE SCHEMA public").is_ok()) {
      state.SkipWithError("cannot empty the database");
      return;
    }
  }
  const int batch = static_cast<int>(state.range(0));
  PostgresStoreOptions options;
  options.max_batch = batch;
  options.commit_shape = state.range(1) != 0 ? PgCommitShape::kPipelined : PgCommitShape::kSavepoints;
  auto store = PostgresStore::open(url, options);
  if (!store) {
    state.SkipWithError(store.status().to_string().c_str());
    return;
  }
  const HistoryBatch first_events = testing::events(1, 3);
  InFlight in_flight(batch);
  int64_t n = 0;
  for (auto _ : state) {
    in_flight.acquire();
    (*store)->commit_async(start_transition(n++, first_events),
                           [&in_flight](Result<CommitResult> r) { in_flight.release(r.is_ok()); });
  }
  if (in_flight.drain() != 0) state.SkipWithError("a commit failed");
  const auto stats = (*store)->writer_stats();
  state.SetItemsProcessed(state.iterations());
  state.counters["per_commit"] = static_cast<double>(stats.transitions) / static_cast<double>(stats.batches);
}
// Args: batch size, shape (1 = pipelined, 0 = a savepoint per transition).
BENCHMARK(BM_PostgresTransitions)
    ->ArgNames({"batch", "pipelined"})
    ->ArgsProduct({{1, 8, 64}, {1, 0}})
    ->UseRealTime()
    ->MinTime(2.0);

std::string blob_data(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 2654435761u) >> 13);
  return s;
}

void BM_BlobPut(benchmark::State& state) {
  TempDir dir;
  auto store = SqliteStore::open(dir.file("blobs.db"));
  std::string data = blob_data(static_cast<size_t>(state.range(0)) << 20);
  uint64_t serial = 0;
  for (auto _ : state) {
    std::memcpy(data.data(), &++serial, sizeof serial);  // new bytes each time: no dedup
    auto info = (*store)->blobs().put(data, "default");
    if (!info) state.SkipWithError(info.status().to_string().c_str());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(data.size()));
}
BENCHMARK(BM_BlobPut)->ArgName("MiB")->Arg(16)->Arg(100)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_BlobGet(benchmark::State& state) {
  TempDir dir;
  auto store = SqliteStore::open(dir.file("blobs.db"));
  const std::string data = blob_data(static_cast<size_t>(state.range(0)) << 20);
  const auto info = (*store)->blobs().put(data, "default");
  for (auto _ : state) {
    auto reader = (*store)->blobs().open(info->sha256, "default");
    int64_t total = 0;
    while (true) {
      auto chunk = (*reader)->next_chunk();
      if (!chunk || chunk->empty()) break;
      total += static_cast<int64_t>(chunk->size());
    }
    benchmark::DoNotOptimize(total);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(data.size()));
}
BENCHMARK(BM_BlobGet)->ArgName("MiB")->Arg(16)->Arg(100)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace reprise::engine

BENCHMARK_MAIN();
