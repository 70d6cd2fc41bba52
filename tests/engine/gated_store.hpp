// A store for engine tests that opens windows real timing leaves tiny: the
// real store underneath, except that the next commit can be held until
// released, reads of the current run can fail, history reads can be slowed
// and a blob collection held or failed, a commit that landed answered in
// doubt, shard ownership played by the test; every call after a mark is
// counted.
#pragma once

#include <atomic>
#include <condition_variable>
#include <optional>
#include <thread>

#include "engine/store/store.hpp"
#include "engine_fixture.hpp"

namespace reprise::engine::testing {

class GatedStore : public Store {
 public:
  explicit GatedStore(Store& inner) : inner_(inner), blobs_(inner.blobs()) {}

  // Blob collections wait, once begun, until released.
  void hold_blob_collection() { blobs_.hold(); }
  bool wait_until_collecting(std::chrono::milliseconds timeout) { return blobs_.wait_until_collecting(timeout); }
  void release_blob_collection() { blobs_.release(); }
  // Blob collections answer UNAVAILABLE from now on; how many have.
  void fail_blob_collections() { blobs_.fail(); }
  int failed_blob_collections() const { return blobs_.failed(); }

  void hold_next_commit() {
    std::lock_guard lock(mu_);
    hold_ = true;
  }
  // Holds the next commit that writes an execution of this workflow id.
  void hold_next_commit_of(std::string workflow_id) {
    std::lock_guard lock(mu_);
    hold_workflow_id_ = std::move(workflow_id);
  }
  // The held commit is lost, as in a crash before it reached the disk.
  void lose_held_commit() {
    std::optional<std::pair<Transition, CommitCallback>> held;
    {
      std::lock_guard lock(mu_);
      held.swap(held_);
    }
    if (held) held->second(Status::unavailable("the test lost this commit"));
  }
  void wait_until_held() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return held_.has_value(); });
  }
  void release() {
    std::optional<std::pair<Transition, CommitCallback>> held;
    {
      std::lock_guard lock(mu_);
      held.swap(held_);
    }
    if (held) inner_.commit_async(std::move(held->first), std::move(held->second));
  }
  // The next commit that writes an execution of this workflow id is made,
  // and its answer is lost: the engine hears "in doubt", as from a
  // PostgreSQL connection cut after the COMMIT reached the database.
  void answer_next_commit_in_doubt_of(std::string workflow_id) {
    std::lock_guard lock(mu_);
    in_doubt_workflow_id_ = std::move(workflow_id);
  }
  // get_execution calls that reached the store.
  int execution_reads() const { return execution_reads_; }
  int history_reads() const { return history_reads_; }
  // What ownership() answers, from the next engine start on (nullptr: a
  // node alone). Outlives the engine.
  void set_ownership(ShardOwnership* ownership) { ownership_ = ownership; }
  ShardOwnership* ownership() override { return ownership_; }
  // get_current_run of this workflow id answers UNAVAILABLE ("" for none).
  void fail_current_run_of(std::string workflow_id) {
    std::lock_guard lock(mu_);
    failing_workflow_id_ = std::move(workflow_id);
  }
  int failed_reads() const { return failed_reads_; }
  // read_history of this workflow id's runs answers UNAVAILABLE ("" for none).
  void fail_history_reads_of(std::string workflow_id) {
    std::lock_guard lock(mu_);
    failing_history_of_ = std::move(workflow_id);
  }
  // History reads take this long from now on; waits for the next one to start.
  void slow_history_reads(std::chrono::milliseconds delay) { history_delay_ms_ = delay.count(); }
  bool wait_for_slow_read(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return slow_reads_ > 0; });
  }
  // Calls made after mark() (by work that should have ended by then).
  void mark() { marked_ = true; }
  int calls_after_mark() const { return calls_after_mark_; }

  void commit_async(Transition transition, CommitCallback done) override {
    count();
    {
      std::lock_guard lock(mu_);
      bool names_held_id = false;
      for (const auto& w : transition.executions) names_held_id |= w.key.workflow_id == hold_workflow_id_;
      if (hold_ || (!hold_workflow_id_.empty() && names_held_id)) {
        hold_ = false;
        hold_workflow_id_.clear();
        held_.emplace(std::move(transition), std::move(done));
        cv_.notify_all();
        return;
      }
      if (!in_doubt_workflow_id_.empty() && names(transition, in_doubt_workflow_id_)) {
        in_doubt_workflow_id_.clear();
        inner_.commit_async(std::move(transition), [done = std::move(done)](Result<CommitResult>) {
          done(Status::in_doubt("the test lost this commit's answer"));
        });
        return;
      }
    }
    inner_.commit_async(std::move(transition), std::move(done));
  }
  Result<ExecutionRecord> get_execution(const ExecutionKey& key) override {
    count();
    ++execution_reads_;
    return inner_.get_execution(key);
  }
  Result<CurrentRun> get_current_run(const std::string& ns, const std::string& workflow_id) override {
    count();
    {
      std::lock_guard lock(mu_);
      if (!failing_workflow_id_.empty() && workflow_id == failing_workflow_id_) {
        ++failed_reads_;
        return Status::unavailable("the test made this read fail");
      }
    }
    return inner_.get_current_run(ns, workflow_id);
  }
  Result<std::vector<HistoryBatch>> read_history(const ExecutionKey& key, int64_t from, int max) override {
    count();
    ++history_reads_;
    {
      std::lock_guard lock(mu_);
      if (!failing_history_of_.empty() && key.workflow_id == failing_history_of_) {
        return Status::unavailable("the test made this history read fail");
      }
    }
    if (const int64_t delay = history_delay_ms_; delay > 0) {
      {
        std::lock_guard lock(mu_);
        ++slow_reads_;
      }
      cv_.notify_all();
      std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    }
    return inner_.read_history(key, from, max);
  }
  Result<std::vector<TaskRecord>> load_tasks(int64_t after, int limit) override {
    count();
    return inner_.load_tasks(after, limit);
  }
  Result<std::vector<TimerRecord>> due_timers(TimePoint until, int limit) override {
    return inner_.due_timers(until, limit);  // the timer loop's own polling is not counted
  }
  Result<std::optional<TimePoint>> next_timer_time() override { return inner_.next_timer_time(); }
  Result<VisibilityPage> list_executions(const VisibilityQuery& query) override {
    count();
    return inner_.list_executions(query);
  }
  Result<std::vector<ClosedRun>> closed_runs(const std::string& namespace_id, TimePoint before,
                                             const std::optional<ClosedRun>& after, int limit) override {
    return inner_.closed_runs(namespace_id, before, after, limit);  // the retention sweeper's polling is not counted
  }
  Result<std::vector<NamespaceRecord>> list_namespaces() override { return inner_.list_namespaces(); }
  Status create_namespace(const NamespaceRecord& record) override { return inner_.create_namespace(record); }
  Status update_namespace(const NamespaceRecord& record) override { return inner_.update_namespace(record); }
  Result<std::vector<ApiKeyRecord>> api_keys() override { return inner_.api_keys(); }
  BlobStore& blobs() override { return blobs_; }

 private:
  class HeldBlobs : public BlobStore {
   public:
    explicit HeldBlobs(BlobStore& inner) : inner_(inner) {}
    void hold() {
      std::lock_guard lock(mu_);
      held_ = true;
    }
    void release() {
      {
        std::lock_guard lock(mu_);
        held_ = false;
      }
      cv_.notify_all();
    }
    bool wait_until_collecting(std::chrono::milliseconds timeout) {
      std::unique_lock lock(mu_);
      return cv_.wait_for(lock, timeout, [this] { return collecting_; });
    }
    void fail() { failing_ = true; }
    int failed() const { return failed_; }
    Result<std::unique_ptr<BlobWriter>> begin_put(const std::string& ns) override { return inner_.begin_put(ns); }
    Result<std::unique_ptr<BlobReader>> open(const history::Sha256Digest& d, const std::string& ns) override {
      return inner_.open(d, ns);
    }
    Result<BlobInfo> stat(const history::Sha256Digest& d, const std::string& ns) override { return inner_.stat(d, ns); }
    Result<GcStats> collect_garbage(std::chrono::nanoseconds grace, const std::function<bool()>& stop) override {
      {
        std::unique_lock lock(mu_);
        collecting_ = true;
        cv_.notify_all();
        cv_.wait(lock, [this] { return !held_; });
      }
      if (failing_) {
        ++failed_;
        return Status::unavailable("the test made this collection fail");
      }
      return inner_.collect_garbage(grace, stop);
    }

   private:
    BlobStore& inner_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool held_ = false;
    bool collecting_ = false;
    std::atomic<bool> failing_{false};
    std::atomic<int> failed_{0};
  };

  void count() {
    if (marked_) ++calls_after_mark_;
  }
  static bool names(const Transition& t, const std::string& workflow_id) {
    for (const auto& w : t.executions) {
      if (w.key.workflow_id == workflow_id) return true;
    }
    return false;
  }

  Store& inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool hold_ = false;
  std::string hold_workflow_id_;
  std::optional<std::pair<Transition, CommitCallback>> held_;
  std::string in_doubt_workflow_id_;
  std::atomic<int> execution_reads_{0};
  std::atomic<int> history_reads_{0};
  ShardOwnership* ownership_ = nullptr;
  std::string failing_workflow_id_;
  std::string failing_history_of_;
  std::atomic<int64_t> history_delay_ms_{0};
  int slow_reads_ = 0;
  std::atomic<bool> marked_{false};
  std::atomic<int> calls_after_mark_{0};
  std::atomic<int> failed_reads_{0};
  HeldBlobs blobs_;
};

}  // namespace reprise::engine::testing

namespace reprise::engine {

// The engine fixture with the engine on a GatedStore (`gate_`) over the
// fixture's real store.
class GatedEngineTest : public EngineTest {
 public:
  void SetUp() override {
    EngineTest::SetUp();
    gate_ = std::make_unique<testing::GatedStore>(*store_);
    engine_store_ = gate_.get();
    restart();
  }
  void TearDown() override {
    engine_.reset();
    gate_.reset();
  }

 protected:
  std::unique_ptr<testing::GatedStore> gate_;
};

}  // namespace reprise::engine
