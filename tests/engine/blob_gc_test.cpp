// Blob collection runs beside the timer loop, not in it: a timer that comes
// due while a collection is under way fires on time; a failed collection is
// logged; and a shutdown stops a long collection between two batches
// instead of waiting for its end.
#include "../captured_stderr.hpp"
#include "engine/store/sqlite_db.hpp"
#include "gated_store.hpp"

namespace reprise::engine {
namespace {

class BlobGcTest : public GatedEngineTest {
 public:
  void TearDown() override {
    gate_->release_blob_collection();
    GatedEngineTest::TearDown();
  }
};

TEST_F(BlobGcTest, ATimerDueDuringABlobCollectionFiresOnTime) {
  gate_->hold_blob_collection();
  restart([](EngineOptions& o) { o.blob_gc_interval = std::chrono::seconds(0); });  // collect at once
  ASSERT_TRUE(gate_->wait_until_collecting(5s));

  // Commits go on meanwhile: a start and a task completion that sets a timer.
  ASSERT_TRUE(start("sleeper").is_ok());
  auto task = poll_workflow();
  ASSERT_FALSE(task.task_token().empty());
  v1::Command timer;
  timer.set_command_type(v1::COMMAND_TYPE_START_TIMER);
  timer.mutable_start_timer()->set_timer_id("nap");
  timer.mutable_start_timer()->mutable_start_to_fire_timeout()->set_seconds(1);
  ASSERT_TRUE(complete(task.task_token(), {timer}).is_ok());

  clock_.advance(1s);
  engine_->check_timers();
  const auto due = std::chrono::steady_clock::now();
  v1::PollWorkflowTaskResponse woken;
  while (woken.task_token().empty() && std::chrono::steady_clock::now() - due < 3s) woken = poll_workflow();
  ASSERT_FALSE(woken.task_token().empty()) << "the timer did not fire while the blob collection was under way";
  const auto late = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - due);
  EXPECT_LT(late, 1s);
  const auto& events = woken.history().events();
  EXPECT_EQ(events[events.size() - 3].event_type(), v1::EVENT_TYPE_TIMER_FIRED);
}

// A collection that fails is logged as an error with the store's reason
// (docs/engine.md, Logs), and the next one still runs at its interval.
TEST_F(BlobGcTest, AFailedCollectionIsLoggedWithItsReason) {
  gate_->fail_blob_collections();
  log::set_format(log::Format::kLogfmt);
  const std::string logged = ::reprise::testing::captured_stderr_of([&] {
    restart([](EngineOptions& o) { o.blob_gc_interval = std::chrono::seconds(0); });  // every 10 ms
    for (int i = 0; i < 500 && gate_->failed_blob_collections() < 2; ++i) std::this_thread::sleep_for(10ms);
    engine_.reset();  // joins the collection thread: its lines are written
  });
  EXPECT_GE(gate_->failed_blob_collections(), 2) << "collections go on after one failed";
  EXPECT_NE(logged.find("level=error msg=\"blob garbage collection failed\" "
                        "error=\"UNAVAILABLE: the test made this collection fail\""),
            std::string::npos)
      << logged;
}

// A store holding many unreferenced blobs, collected one per transaction:
// a collection of all of them takes far longer than a shutdown may.
class LongBlobGcTest : public EngineTest {
 public:
  static constexpr int kBlobs = 20'000;

  void SetUp() override {
    EngineTest::SetUp();
    engine_.reset();
    store_.reset();
    {
      auto db = SqliteDb::open(dir_.file("engine.db"), false, Durability::kFull);
      ASSERT_TRUE(db.is_ok()) << db.status().to_string();
      ASSERT_TRUE((*db)->exec("BEGIN").is_ok());
      for (int i = 0; i < kBlobs; ++i) {
        auto put = (*db)->prepare("INSERT INTO blobs (sha256, size, complete, touched_at) VALUES (?1, 1, 1, 0)");
        ASSERT_TRUE(put.is_ok()) << put.status().to_string();
        ASSERT_TRUE(put->bind_blob(1, "unreferenced blob " + std::to_string(i)).run().is_ok());
      }
      ASSERT_TRUE((*db)->exec("COMMIT").is_ok());
    }
    StoreOptions store_options;
    store_options.clock = &clock_;
    store_options.blobs.gc_batch = 1;
    auto store = SqliteStore::open(dir_.file("engine.db"), store_options);
    ASSERT_TRUE(store.is_ok()) << store.status().to_string();
    store_ = std::move(store).value();
  }

  int64_t blobs_left() {
    auto db = SqliteDb::open_read_only(dir_.file("engine.db"));
    if (!db.is_ok()) return -1;
    auto count = (*db)->prepare("SELECT count(*) FROM blobs");
    if (!count.is_ok()) return -1;
    Result<bool> row = count->step();
    if (!row.is_ok() || !*row) return -1;
    return count->column_int(0);
  }
};

TEST_F(LongBlobGcTest, AShutdownDuringALongCollectionReturnsPromptly) {
  restart([](EngineOptions& o) {
    o.blob_gc_interval = std::chrono::seconds(0);  // collect at once
    o.blob_gc_grace = std::chrono::seconds(0);
  });
  const auto begun = std::chrono::steady_clock::now();
  while (blobs_left() == kBlobs && std::chrono::steady_clock::now() - begun < 5s) std::this_thread::sleep_for(5ms);
  ASSERT_LT(blobs_left(), kBlobs) << "the collection did not begin";

  const auto stopping = std::chrono::steady_clock::now();
  engine_->shutdown();
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - stopping);
  EXPECT_LT(took, 1s) << "shutdown waited for the whole collection";
  EXPECT_GT(blobs_left(), 0) << "the collection ran to its end: the store is too small to test a long one";
}

}  // namespace
}  // namespace reprise::engine
