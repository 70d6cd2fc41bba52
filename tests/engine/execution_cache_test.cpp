// The execution cache (engine/execution_cache.hpp): a run the engine
// committed is not read back from the store for its next transition, and
// every way the store can come to hold another version than the cache
// drops the entry: a commit answered in doubt, a write the engine did not
// make (caught by the version check, the op run again on the stored
// state), and shards changing hands in a cluster. Each test's stale read
// shows in describe, which answers from the cache too.
#include "engine/execution_cache.hpp"

#include "gated_store.hpp"

namespace reprise::engine {
namespace {

// One shard, served or not as the test says; the engine hears every change
// as the store's lease thread would tell it.
class CacheTestShards : public ShardOwnership {
 public:
  int shard_count() const override { return 1; }
  bool serves(int64_t) const override { return serving_; }
  std::string owner_of(int64_t) const override { return serving_ ? "this node" : "another node"; }
  std::string owner_address(int64_t) const override { return ""; }
  std::vector<std::string> peer_addresses() const override { return {}; }
  std::string queue_owner_address(int64_t) const override { return ""; }
  size_t live_nodes() const override { return 1; }
  void listen(ShardListener listener) override {
    listener_ = std::move(listener);
    if (listener_.gained) listener_.gained(ShardSet{true});
  }
  void lose() {
    serving_ = false;
    listener_.lost(ShardSet{true});
  }
  void gain() {
    serving_ = true;
    listener_.gained(ShardSet{true});
  }
  // The lease ran out by the node's own clock, its lease thread yet to say
  // so (stuck on the database).
  void lose_unannounced() { serving_ = false; }

 private:
  std::atomic<bool> serving_{true};
  ShardListener listener_;
};

class ExecutionCacheTest : public GatedEngineTest {
 protected:
  // A second engine on the same database: the other writer.
  std::unique_ptr<Engine> other_writer() {
    EngineOptions options;
    options.clock = &clock_;
    options.poll_timeout = 300ms;
    options.random_seed = 7;
    auto engine = Engine::start(*store_, options);
    EXPECT_TRUE(engine.is_ok()) << engine.status().to_string();
    return engine.is_ok() ? std::move(engine).value() : nullptr;
  }
  static Status poke_through(Engine& engine, const std::string& workflow_id) {
    v1::SignalWorkflowRequest s;
    s.mutable_workflow_execution()->set_workflow_id(workflow_id);
    s.set_signal_name("poke");
    std::promise<Result<v1::SignalWorkflowResponse>> done;
    engine.signal_workflow(s, [&done](Result<v1::SignalWorkflowResponse> r) { done.set_value(std::move(r)); });
    return done.get_future().get().status();
  }
  // A second engine on the same database signals the run once.
  void other_writer_pokes(const std::string& workflow_id) {
    std::unique_ptr<Engine> other = other_writer();
    ASSERT_NE(other, nullptr);
    ASSERT_TRUE(poke_through(*other, workflow_id).is_ok());
  }
  // Describe answers the history length the store holds.
  void expect_describe_matches_store(const std::string& workflow_id, const std::string& otherwise) {
    Result<int64_t> described = describe_length(workflow_id);
    ASSERT_TRUE(described.is_ok()) << described.status().to_string();
    EXPECT_EQ(*described, stored_length(workflow_id)) << otherwise;
  }
  // The history length the store holds, read past every cache.
  int64_t stored_length(const std::string& workflow_id) {
    Result<CurrentRun> run = store_->get_current_run("default", workflow_id);
    EXPECT_TRUE(run.is_ok()) << run.status().to_string();
    if (!run) return -1;
    Result<ExecutionRecord> record = store_->get_execution({"default", workflow_id, run->run_id});
    EXPECT_TRUE(record.is_ok()) << record.status().to_string();
    return record ? record->next_event_id - 1 : -1;
  }
};

TEST_F(ExecutionCacheTest, TheNextTransitionOfARunTheEngineCommittedReadsNothingOfItFromTheStore) {
  ASSERT_TRUE(start("cached").is_ok());
  ASSERT_TRUE(poke("cached").is_ok());
  const int reads = gate_->execution_reads();
  const uint64_t hits = engine_->execution_cache_stats().hits;
  ASSERT_TRUE(poke("cached").is_ok());
  ASSERT_TRUE(poke("cached").is_ok());
  EXPECT_EQ(gate_->execution_reads(), reads) << "the signals read the run from the store";
  EXPECT_GE(engine_->execution_cache_stats().hits, hits + 2);
  ASSERT_TRUE(describe_length("cached").is_ok());
  EXPECT_EQ(*describe_length("cached"), stored_length("cached"));

  // With no room, every transition reads the store, as before the cache.
  restart([](EngineOptions& o) { o.execution_cache_entries = 0; });
  ASSERT_TRUE(poke("cached").is_ok());
  const int uncached = gate_->execution_reads();
  ASSERT_TRUE(poke("cached").is_ok());
  EXPECT_EQ(gate_->execution_reads(), uncached + 1);
}

// The store made the commit and the engine heard "in doubt": the entry of
// the version before must go, or describe (and the next op) would work on
// a version the store no longer holds.
TEST_F(ExecutionCacheTest, ACommitAnsweredInDoubtDropsTheEntryAndTheRunIsReadFromTheStore) {
  ASSERT_TRUE(start("doubted").is_ok());
  ASSERT_TRUE(poke("doubted").is_ok());
  gate_->answer_next_commit_in_doubt_of("doubted");
  Status lost = poke("doubted");
  ASSERT_FALSE(lost.is_ok());
  EXPECT_TRUE(lost.in_doubt()) << lost.to_string();
  const int64_t stored = stored_length("doubted");
  ASSERT_TRUE(describe_length("doubted").is_ok());
  EXPECT_EQ(*describe_length("doubted"), stored) << "describe answered from a version the store no longer holds";
  ASSERT_TRUE(poke("doubted").is_ok());
  EXPECT_EQ(stored_length("doubted"), stored + 1);
}

// Another writer commits a version the engine did not make: the engine's
// next op on its cached version fails the store's version check, and runs
// again on what the store holds; the caller never sees the conflict.
TEST_F(ExecutionCacheTest, AWriteTheEngineDidNotMakeFailsTheVersionCheckAndTheOpRunsAgainOnTheStoredState) {
  ASSERT_TRUE(start("shared").is_ok());
  ASSERT_TRUE(poke("shared").is_ok());
  other_writer_pokes("shared");
  const int64_t stored = stored_length("shared");
  Status s = poke("shared");
  EXPECT_TRUE(s.is_ok()) << "the op met the other writer's version: " << s.to_string();
  EXPECT_EQ(stored_length("shared"), stored + 1);
  ASSERT_TRUE(describe_length("shared").is_ok());
  EXPECT_EQ(*describe_length("shared"), stored + 1);
}

// A task start committed on a cached version another writer has replaced
// runs again on the stored one: the task is handed out, and counted, once.
TEST_F(ExecutionCacheTest, ATaskStartRunAgainOnTheStoredVersionIsCountedOnce) {
  metrics::Registry registry;
  restart([&registry](EngineOptions& o) {
    o.metrics = &registry;
    o.max_held_start = 0ms;  // every start commits, and so meets the version check
  });
  ASSERT_TRUE(start("counted").is_ok());
  other_writer_pokes("counted");
  ASSERT_FALSE(poll_workflow().task_token().empty());
  const std::string page = registry.scrape();
  const std::string series = "task_schedule_to_start_latency_seconds_count{task_type=\"workflow\",sticky=\"false\"} ";
  const size_t at = page.find(series);
  ASSERT_NE(at, std::string::npos) << page;
  EXPECT_EQ(std::strtod(page.c_str() + at + series.size(), nullptr), 1)
      << "the start was counted by each run of its transition";
}

// The history a hello workflow's tasks and its result wait read was
// committed by this engine just before: all of it comes from the cache,
// and it is the history the store holds.
TEST_F(ExecutionCacheTest, AHelloWorkflowReadsNoneOfItsHistoryFromTheStore) {
  auto full_history = [this](const std::string& workflow_id) {
    v1::GetHistoryRequest r;
    r.mutable_workflow_execution()->set_workflow_id(workflow_id);
    auto h = call(&Engine::get_history, r);
    EXPECT_TRUE(h.is_ok()) << h.status().to_string();
    return h.is_ok() ? h->history().SerializeAsString() : std::string();
  };
  const int before = gate_->history_reads();
  ASSERT_TRUE(start("from-memory").is_ok());
  run_hello_worker_from(poll_workflow());
  EXPECT_EQ(wait_for_close("from-memory").workflow_execution_completed().result().payloads(0).data(), "Hello, world!");
  const std::string served = full_history("from-memory");
  EXPECT_EQ(gate_->history_reads(), before) << "a history read went to the store";
  EXPECT_GE(engine_->execution_cache_stats().history_hits, 4u);

  // Without the cache the same reads go to the store, and find the same history.
  restart([](EngineOptions& o) { o.execution_cache_entries = 0; });
  EXPECT_EQ(full_history("from-memory"), served) << "the cache served another history than the store holds";
  ASSERT_TRUE(start("from-store").is_ok());
  run_hello_worker_from(poll_workflow());
  wait_for_close("from-store");
  EXPECT_GE(gate_->history_reads(), before + 4);
}

class ExecutionCacheShardTest : public ExecutionCacheTest {
 public:
  void SetUp() override {
    EngineTest::SetUp();
    gate_ = std::make_unique<testing::GatedStore>(*store_);
    gate_->set_ownership(&shards_);
    engine_store_ = gate_.get();
    restart();
  }

 protected:
  CacheTestShards shards_;
};

// The shard moved away and its new node wrote the run: what this node
// cached of it went when it lost the shard.
TEST_F(ExecutionCacheShardTest, ANodeThatLosesAShardDropsItsEntries) {
  ASSERT_TRUE(start("moved").is_ok());
  ASSERT_TRUE(poke("moved").is_ok());
  shards_.lose();
  other_writer_pokes("moved");
  expect_describe_matches_store("moved", "describe answered from before the move");
}

// The node's lease ran out by its own clock while its lease thread, stuck
// on the database, has not yet dropped the shard's entries; the new node
// wrote the run. A describe asked of this node reads the store.
TEST_F(ExecutionCacheShardTest, ANodeWhoseLeaseRanOutUnannouncedReadsTheStore) {
  ASSERT_TRUE(start("expired").is_ok());
  ASSERT_TRUE(poke("expired").is_ok());
  shards_.lose_unannounced();
  other_writer_pokes("expired");
  expect_describe_matches_store("expired", "describe answered from the expired lease's cache");
}

// A node that takes a shard (back) trusts nothing it cached of it before,
// even if it never heard that it had lost it.
TEST_F(ExecutionCacheShardTest, ANodeThatGainsAShardDropsWhatItHeldOfIt) {
  ASSERT_TRUE(start("regained").is_ok());
  ASSERT_TRUE(poke("regained").is_ok());
  other_writer_pokes("regained");
  shards_.gain();
  expect_describe_matches_store("regained", "describe answered from before the gain");
}

// A commit under way while the shard moves lands after the move's drop: it
// must not put its version back (the new owner may have written since).
TEST_F(ExecutionCacheShardTest, ACommitUnderWayWhileTheShardMovesPutsNothing) {
  ASSERT_TRUE(start("racing").is_ok());
  gate_->hold_next_commit_of("racing");
  std::promise<Status> poked;
  std::thread poker([this, &poked] { poked.set_value(poke("racing")); });
  gate_->wait_until_held();
  shards_.lose();
  gate_->release();  // SQLite fences nothing: the commit goes through
  EXPECT_TRUE(poked.get_future().get().is_ok());
  poker.join();
  other_writer_pokes("racing");
  expect_describe_matches_store("racing", "the late commit put a version back");
}

// At most the cache's bytes of state are kept (a run's state carries its
// buffered signals, up to megabytes): the least recently used go first,
// and a state larger than the bound is not kept at all.
TEST(ExecutionCacheBounds, TheStatesKeptStayWithinTheByteBound) {
  ExecutionCache cache(100, 1000);
  auto write = [](const std::string& id, size_t bytes) {
    ExecutionWrite w;
    w.key = {"default", id, "run"};
    w.state = std::string(bytes, 'x');
    return w;
  };
  auto kept = [&cache](const std::string& id) { return cache.find({"default", id, "run"}).has_value(); };
  cache.committed(write("a", 400), 1, cache.generation());
  cache.committed(write("b", 400), 1, cache.generation());
  EXPECT_EQ(cache.stats().bytes, 800u);
  EXPECT_TRUE(kept("a"));  // now the most recently used
  cache.committed(write("c", 400), 1, cache.generation());
  EXPECT_EQ(cache.stats().bytes, 800u);
  EXPECT_TRUE(kept("a"));
  EXPECT_FALSE(kept("b")) << "the least recently used was kept past the bound";
  EXPECT_TRUE(kept("c"));
  cache.committed(write("huge", 1001), 1, cache.generation());
  EXPECT_FALSE(kept("huge"));
  EXPECT_EQ(cache.stats().bytes, 800u);
  cache.committed(write("a", 100), 2, cache.generation());  // a new version of a, smaller
  EXPECT_EQ(cache.stats().bytes, 500u);
  cache.erase({"default", "c", "run"});
  EXPECT_EQ(cache.stats().bytes, 100u);
}

}  // namespace
}  // namespace reprise::engine

namespace reprise::engine {
namespace {

ExecutionWrite history_write(int64_t expected_version, int64_t first, int64_t last, std::string data) {
  ExecutionWrite w;
  w.key = {"default", "wf", "run"};
  w.expected_version = expected_version;
  w.state = "s";
  w.events = HistoryBatch{first, last, std::move(data)};
  return w;
}

std::vector<int64_t> firsts(const std::optional<std::vector<HistoryBatch>>& batches) {
  std::vector<int64_t> out;
  for (const HistoryBatch& b : batches.value_or(std::vector<HistoryBatch>{})) out.push_back(b.first_event_id);
  return out;
}

// The history kept with an entry is contiguous up to the run's last event:
// asked from an event it holds it answers (an empty answer past the end),
// from before it, or after a gap or a batch it was not given, it sends the
// reader to the store.
TEST(ExecutionCacheHistory, AnswersOnlyFromAnUnbrokenRunOfBatchesEndingAtTheLastEvent) {
  const ExecutionKey key{"default", "wf", "run"};
  ExecutionCache cache(10, 1 << 20);
  cache.committed(history_write(0, 1, 2, "ab"), 1, cache.generation());
  cache.committed(history_write(1, 3, 5, "cde"), 2, cache.generation());
  EXPECT_EQ(firsts(cache.history(key, 1, 16, 0)), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(firsts(cache.history(key, 4, 16, 0)), (std::vector<int64_t>{3}));
  EXPECT_EQ(firsts(cache.history(key, 1, 1, 0)), (std::vector<int64_t>{1})) << "more batches than asked for";
  ASSERT_TRUE(cache.history(key, 6, 16, 5).has_value()) << "past the end is known: nothing";
  EXPECT_TRUE(cache.history(key, 6, 16, 5)->empty());
  // The caller saw event 7 stored: the entry is a commit behind, and its
  // end is no answer.
  EXPECT_FALSE(cache.history(key, 6, 16, 7).has_value()) << "claimed an end before an event known to be stored";
  EXPECT_EQ(firsts(cache.history(key, 4, 16, 7)), (std::vector<int64_t>{3})) << "what it holds is still true";
  EXPECT_EQ(cache.stats().bytes, 1u + 2 + 3);

  ExecutionWrite no_events = history_write(2, 0, 0, "");
  no_events.events.reset();
  cache.committed(no_events, 3, cache.generation());
  EXPECT_EQ(firsts(cache.history(key, 1, 16, 0)), (std::vector<int64_t>{1, 3})) << "a write without events keeps it";

  // A version the entry does not continue (another writer's in between).
  cache.committed(history_write(7, 20, 21, "uv"), 8, cache.generation());
  EXPECT_FALSE(cache.history(key, 1, 16, 0).has_value()) << "answered across a gap";
  EXPECT_EQ(firsts(cache.history(key, 20, 16, 0)), (std::vector<int64_t>{20}));

  // A batch whose data the engine left out (too large to keep).
  cache.committed(history_write(8, 22, 30, ""), 9, cache.generation());
  EXPECT_FALSE(cache.history(key, 20, 16, 0).has_value()) << "answered with a batch it was not given";
  EXPECT_FALSE(cache.history(key, 22, 16, 0).has_value());
  EXPECT_EQ(cache.stats().bytes, 1u);
}

TEST(ExecutionCacheHistory, KeepsTheNewestBatchesWithinItsBoundPerRun) {
  const ExecutionKey key{"default", "wf", "run"};
  ExecutionCache cache(10, 1 << 20);
  const std::string third(ExecutionCache::kRecentHistoryBytes / 3, 'x');
  for (int64_t v = 0; v < 5; ++v) cache.committed(history_write(v, v * 10 + 1, v * 10 + 10, third), v + 1, 0);
  EXPECT_FALSE(cache.history(key, 11, 16, 0).has_value()) << "kept more than kRecentHistoryBytes of history";
  EXPECT_EQ(firsts(cache.history(key, 21, 16, 0)), (std::vector<int64_t>{21, 31, 41}));
  EXPECT_EQ(cache.stats().bytes, 1 + 3 * third.size());
  cache.erase(key);
  EXPECT_EQ(cache.stats().bytes, 0u);

  // A run whose state and history pass the cache's bound keeps its state.
  ExecutionCache small(10, third.size() + 10);
  small.committed(history_write(0, 1, 10, third), 1, 0);
  small.committed(history_write(1, 11, 20, third), 2, 0);
  EXPECT_TRUE(small.find(key).has_value()) << "the run's history pushed its own state out";
  EXPECT_EQ(firsts(small.history(key, 11, 16, 0)), (std::vector<int64_t>{11}));
  EXPECT_EQ(small.stats().bytes, 1 + third.size());
}

}  // namespace
}  // namespace reprise::engine
