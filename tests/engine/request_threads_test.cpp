// A request's caller (a gRPC callback thread in reprise-server) never waits
// on SQLite: every entry point that reads the store or the blob store hands
// that work to the engine's read pool and returns at once. Tested with every
// store and blob store read held until the test lets it go.
#include <future>

#include "engine_fixture.hpp"
#include "history/payload.hpp"

namespace reprise::engine {
namespace {

// Holds every read (of the store and of the blob store) and every blob
// upload while closed; commits go through.
class ReadGate {
 public:
  void close() {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  void open() {
    {
      std::lock_guard lock(mu_);
      closed_ = false;
    }
    cv_.notify_all();
  }
  void pass() {
    std::unique_lock lock(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [this] { return !closed_; });
    --waiting_;
  }
  // Whether `n` calls came to wait at the closed gate within `timeout`.
  bool wait_for_waiting(int n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return waiting_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;
  int waiting_ = 0;
};

class GatedBlobs : public BlobStore {
 public:
  GatedBlobs(BlobStore& inner, ReadGate& gate, ReadGate& uploads) : inner_(inner), gate_(gate), uploads_(uploads) {}
  Result<std::unique_ptr<BlobWriter>> begin_put(const std::string& ns) override {
    gate_.pass();
    uploads_.pass();  // as an upload waits for a stalled writer
    return inner_.begin_put(ns);
  }
  Result<std::unique_ptr<BlobReader>> open(const history::Sha256Digest& sha256, const std::string& ns) override {
    gate_.pass();
    return inner_.open(sha256, ns);
  }
  Result<BlobInfo> stat(const history::Sha256Digest& sha256, const std::string& ns) override {
    gate_.pass();
    return inner_.stat(sha256, ns);
  }
  Result<GcStats> collect_garbage(std::chrono::nanoseconds grace, const std::function<bool()>& stop) override {
    return inner_.collect_garbage(grace, stop);
  }

 private:
  BlobStore& inner_;
  ReadGate& gate_;
  ReadGate& uploads_;
};

class GatedReads : public Store {
 public:
  GatedReads(Store& inner, ReadGate& gate, ReadGate& uploads)
      : inner_(inner), gate_(gate), blobs_(inner.blobs(), gate, uploads) {}
  void commit_async(Transition t, CommitCallback done) override { inner_.commit_async(std::move(t), std::move(done)); }
  Result<ExecutionRecord> get_execution(const ExecutionKey& key) override {
    gate_.pass();
    return inner_.get_execution(key);
  }
  Result<CurrentRun> get_current_run(const std::string& ns, const std::string& workflow_id) override {
    gate_.pass();
    return inner_.get_current_run(ns, workflow_id);
  }
  Result<std::vector<HistoryBatch>> read_history(const ExecutionKey& key, int64_t from, int max) override {
    gate_.pass();
    return inner_.read_history(key, from, max);
  }
  Result<std::vector<TaskRecord>> load_tasks(int64_t after, int limit) override {
    return inner_.load_tasks(after, limit);
  }
  Result<std::vector<TimerRecord>> due_timers(TimePoint until, int limit) override {
    return inner_.due_timers(until, limit);
  }
  Result<std::optional<TimePoint>> next_timer_time() override { return inner_.next_timer_time(); }
  Result<VisibilityPage> list_executions(const VisibilityQuery& query) override {
    gate_.pass();
    return inner_.list_executions(query);
  }
  Result<std::vector<ClosedRun>> closed_runs(const std::string& namespace_id, TimePoint before,
                                             const std::optional<ClosedRun>& after, int limit) override {
    return inner_.closed_runs(namespace_id, before, after, limit);
  }
  Result<std::vector<NamespaceRecord>> list_namespaces() override { return inner_.list_namespaces(); }
  Status create_namespace(const NamespaceRecord& record) override { return inner_.create_namespace(record); }
  Status update_namespace(const NamespaceRecord& record) override { return inner_.update_namespace(record); }
  Result<std::vector<ApiKeyRecord>> api_keys() override { return inner_.api_keys(); }
  BlobStore& blobs() override { return blobs_; }

 private:
  Store& inner_;
  ReadGate& gate_;
  GatedBlobs blobs_;
};

class RequestThreadsTest : public EngineTest {
 public:
  void SetUp() override {
    EngineTest::SetUp();
    gated_ = std::make_unique<GatedReads>(*store_, gate_, uploads_);
    engine_store_ = gated_.get();
    restart();
  }
  void TearDown() override {
    gate_.open();
    uploads_.open();
    calls_.clear();  // each waits for its call to return
    engine_.reset();
  }

  // Sends a request from a thread of its own, as gRPC would; whether the
  // call came back within a second while the reads are held. Its answer is
  // kept for later.
  template <typename Resp, typename Req>
  bool returns_at_once(void (Engine::*method)(Req, Reply<Resp>), Req request) {
    return returns_at_once<Resp>(
        [this, method, request](Reply<Resp> reply) { (engine_.get()->*method)(request, std::move(reply)); });
  }
  template <typename Resp, typename Req>
  bool returns_at_once(void (Engine::*method)(Req, Reply<Resp>, std::shared_ptr<PollTicket>), Req request) {
    return returns_at_once<Resp>(
        [this, method, request](Reply<Resp> reply) { (engine_.get()->*method)(request, std::move(reply), nullptr); });
  }
  template <typename Resp>
  bool returns_at_once(std::function<void(Reply<Resp>)> send) {
    auto answer = std::make_shared<std::promise<Status>>();
    answers_.push_back(answer->get_future());
    auto call = std::async(std::launch::async,
                           [send, answer] { send([answer](Result<Resp> r) { answer->set_value(r.status()); }); });
    const bool returned = call.wait_for(1s) == std::future_status::ready;
    calls_.push_back(std::move(call));
    return returned;
  }

 protected:
  ReadGate gate_;
  ReadGate uploads_;  // blob uploads only
  std::unique_ptr<GatedReads> gated_;
  std::vector<std::future<Status>> answers_;
  std::vector<std::future<void>> calls_;
};

TEST_F(RequestThreadsTest, EveryRequestThatReadsTheStoreReturnsToItsCallerWhileTheReadIsHeld) {
  ASSERT_TRUE(start("wf").is_ok());
  const auto task = poll_workflow();
  ASSERT_TRUE(complete(task.task_token(), {schedule_greet()}).is_ok());
  const auto activity = poll_activity();
  ASSERT_FALSE(activity.task_token().empty());
  gate_.close();

  v1::WorkflowExecution wf;
  wf.set_workflow_id("wf");
  v1::DescribeWorkflowRequest describe;
  *describe.mutable_workflow_execution() = wf;
  // Many at once: more than the read pool has threads.
  for (int i = 0; i < 16; ++i) EXPECT_TRUE(returns_at_once(&Engine::describe_workflow, describe)) << "describe " << i;
  EXPECT_TRUE(returns_at_once(&Engine::list_workflows, v1::ListWorkflowsRequest())) << "list";
  v1::GetHistoryRequest history;
  *history.mutable_workflow_execution() = wf;
  EXPECT_TRUE(returns_at_once(&Engine::get_history, history)) << "get_history";
  v1::QueryWorkflowRequest query;
  *query.mutable_workflow_execution() = wf;
  query.set_query_type("state");
  query.mutable_timeout()->set_seconds(1);
  EXPECT_TRUE(returns_at_once(&Engine::query_workflow, query)) << "query";
  v1::SignalWorkflowRequest signal;
  *signal.mutable_workflow_execution() = wf;
  signal.set_signal_name("poke");
  EXPECT_TRUE(returns_at_once(&Engine::signal_workflow, signal)) << "signal";
  v1::RequestCancelWorkflowRequest cancel;
  *cancel.mutable_workflow_execution() = wf;
  EXPECT_TRUE(returns_at_once(&Engine::request_cancel_workflow, cancel)) << "cancel";
  v1::StartWorkflowRequest big_start;
  big_start.set_workflow_id("big");
  big_start.mutable_workflow_type()->set_name("hello");
  big_start.mutable_task_queue()->set_name("greetings");
  big_start.mutable_input()->add_payloads()->set_data(std::string(200 << 10, 'x'));  // claim-checked: an upload
  EXPECT_TRUE(returns_at_once(&Engine::start_workflow, big_start)) << "start with a large input";
  v1::CompleteActivityRequest big_result;
  big_result.set_task_token(activity.task_token());
  big_result.mutable_result()->add_payloads()->set_data(std::string(200 << 10, 'y'));
  EXPECT_TRUE(returns_at_once(&Engine::complete_activity, big_result)) << "activity result to upload";
  v1::TerminateWorkflowRequest terminate;
  *terminate.mutable_workflow_execution() = wf;
  EXPECT_TRUE(returns_at_once(&Engine::terminate_workflow, terminate)) << "terminate";
  v1::DeleteWorkflowExecutionRequest erase;
  *erase.mutable_workflow_execution() = wf;
  EXPECT_TRUE(returns_at_once(&Engine::delete_workflow_execution, erase)) << "delete";

  gate_.open();
  for (auto& answer : answers_) {
    ASSERT_EQ(answer.wait_for(10s), std::future_status::ready) << "a request was not answered once reads went on";
    // Answers race one another (the terminate and the delete close the run
    // the others act on, the query times out with no worker): any answer
    // but the store's own trouble will do.
    const Status s = answer.get();
    EXPECT_NE(s.code(), StatusCode::kInternal) << s.to_string();
    EXPECT_NE(s.code(), StatusCode::kUnavailable) << s.to_string();
  }
}

// Uploads wait for the store's writer, which a busy or full disk holds up:
// however many are stuck, the reads other requests need still run.
TEST_F(RequestThreadsTest, UploadsHeldUpDoNotQueueReadsBehindThem) {
  ASSERT_TRUE(start("wf").is_ok());
  uploads_.close();
  const int stuck = EngineOptions().read_threads * 2;
  for (int i = 0; i < stuck; ++i) {
    v1::StartWorkflowRequest big;
    big.set_workflow_id("big-" + std::to_string(i));
    big.mutable_workflow_type()->set_name("hello");
    big.mutable_task_queue()->set_name("greetings");
    big.mutable_input()->add_payloads()->set_data(std::string(200 << 10, 'x'));  // claim-checked: an upload
    EXPECT_TRUE(returns_at_once(&Engine::start_workflow, big)) << "start " << i;
  }
  ASSERT_TRUE(uploads_.wait_for_waiting(EngineOptions().upload_threads, 5s)) << "the uploads did not begin";

  v1::DescribeWorkflowRequest describe;
  describe.mutable_workflow_execution()->set_workflow_id("wf");
  auto described = std::async(std::launch::async, [&] { return call(&Engine::describe_workflow, describe); });
  const bool answered = described.wait_for(5s) == std::future_status::ready;
  uploads_.open();  // before any failure returns: the describe's future waits for it
  ASSERT_TRUE(answered) << "a describe waited behind stuck uploads";
  EXPECT_TRUE(described.get().is_ok());

  for (auto& answer : answers_) {
    ASSERT_EQ(answer.wait_for(10s), std::future_status::ready) << "an upload was not answered once let through";
    const Status s = answer.get();
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
}

}  // namespace
}  // namespace reprise::engine
