// TestEnvironment: the embedded engine on a temporary database and a manual
// clock. Time skipping: while the test waits (in a workflow's result(), seen
// as a long-poll for its close event, or in env.sleep()), a thread watches for
// the moment nothing can happen without time passing — no task queued or
// stored, none handed out and not yet answered, no timer due — and then moves
// the clock to the next timer (or to the end of the sleep, if sooner).
#include <stdlib.h>

#include <filesystem>

#include "reprise/testing.hpp"
#include "sdk/src/embedded_connection.hpp"

namespace reprise::testing {

// Counts the tasks handed to workers and not yet answered: time must not
// move while one is being worked on.
class TestEnvironment::TrackingConnection final : public Connection {
  template <typename F>
  auto counted(F call) {
    struct Count {
      std::atomic<int64_t>& calls;
      ~Count() { ++calls; }
    } count{calls_};
    return call();
  }
  // Answers a task handed out earlier, whether or not the answer is taken.
  template <typename F>
  void answered(F call) {
    struct Done {
      TrackingConnection& c;
      ~Done() {
        --c.outstanding_;
        ++c.calls_;
      }
    } done{*this};
    call();
  }

 public:
  explicit TrackingConnection(std::shared_ptr<Connection> inner) : inner_(std::move(inner)) {}
  int64_t outstanding() const { return outstanding_.load(); }
  // Calls blocked waiting for a workflow to close: the test in result().
  int waiting_for_results() const { return waiting_for_results_.load(); }
  // Changes with every answered call: a quiet period sees it unchanged.
  int64_t calls() const { return calls_.load(); }

  v1::StartWorkflowResponse start_workflow(const v1::StartWorkflowRequest& r) override {
    // Time skipping sees a result wait as a GetHistory long-poll: the start
    // does not wait here, and the client then waits that way.
    v1::StartWorkflowRequest without_wait = r;
    without_wait.clear_wait_for_result();
    without_wait.clear_wait_timeout();
    return counted([&] {
      v1::StartWorkflowResponse out = inner_->start_workflow(without_wait);
      // An eager start's first task is handed out as a poll's is.
      if (!out.eager_workflow_task().task_token().empty()) ++outstanding_;
      return out;
    });
  }
  void signal_workflow(const v1::SignalWorkflowRequest& r) override {
    counted([&] { inner_->signal_workflow(r); });
  }
  v1::QueryWorkflowResponse query_workflow(const v1::QueryWorkflowRequest& r) override {
    return inner_->query_workflow(r);
  }
  void request_cancel_workflow(const v1::RequestCancelWorkflowRequest& r) override {
    counted([&] { inner_->request_cancel_workflow(r); });
  }
  void terminate_workflow(const v1::TerminateWorkflowRequest& r) override {
    counted([&] { inner_->terminate_workflow(r); });
  }
  v1::DeleteWorkflowExecutionResponse delete_workflow(const v1::DeleteWorkflowExecutionRequest& r) override {
    return counted([&] { return inner_->delete_workflow(r); });
  }
  v1::DescribeWorkflowResponse describe_workflow(const v1::DescribeWorkflowRequest& r) override {
    return inner_->describe_workflow(r);
  }
  v1::ListWorkflowsResponse list_workflows(const v1::ListWorkflowsRequest& r) override {
    return inner_->list_workflows(r);
  }
  v1::GetHistoryResponse get_history(const v1::GetHistoryRequest& r, std::chrono::seconds timeout) override {
    if (!r.wait_new_event() || !r.close_event_only()) return inner_->get_history(r, timeout);
    struct Waiting {
      std::atomic<int>& count;
      explicit Waiting(std::atomic<int>& c) : count(c) { ++count; }
      ~Waiting() { --count; }
    } waiting(waiting_for_results_);
    return inner_->get_history(r, timeout);
  }
  v1::PollWorkflowTaskResponse poll_workflow_task(const v1::PollWorkflowTaskRequest& r) override {
    v1::PollWorkflowTaskResponse task = inner_->poll_workflow_task(r);
    if (!task.task_token().empty()) ++outstanding_;
    return task;
  }
  v1::CompleteWorkflowTaskResponse complete_workflow_task(const v1::CompleteWorkflowTaskRequest& r) override {
    v1::CompleteWorkflowTaskResponse out;
    answered([&] {
      out = inner_->complete_workflow_task(r);
      // Activities started for the worker are handed out as a poll's are,
      // counted before the task that started them is counted done.
      outstanding_ += out.activity_tasks_size();
    });
    return out;
  }
  void fail_workflow_task(const v1::FailWorkflowTaskRequest& r) override {
    answered([&] { inner_->fail_workflow_task(r); });
  }
  v1::PollActivityTaskResponse poll_activity_task(const v1::PollActivityTaskRequest& r) override {
    v1::PollActivityTaskResponse task = inner_->poll_activity_task(r);
    if (!task.task_token().empty()) ++outstanding_;
    return task;
  }
  bool heartbeat_activity(const v1::HeartbeatActivityRequest& r) override { return inner_->heartbeat_activity(r); }
  void complete_activity(const v1::CompleteActivityRequest& r) override {
    answered([&] { inner_->complete_activity(r); });
  }
  void fail_activity(const v1::FailActivityRequest& r) override {
    answered([&] { inner_->fail_activity(r); });
  }
  void report_activity_canceled(const v1::ReportActivityCanceledRequest& r) override {
    answered([&] { inner_->report_activity_canceled(r); });
  }
  v1::PutPayloadResponse put_payload(std::string_view bytes) override { return inner_->put_payload(bytes); }
  std::string get_payload(const std::string& sha256) override { return inner_->get_payload(sha256); }
  void cancel_polls() override { inner_->cancel_polls(); }

 private:
  std::shared_ptr<Connection> inner_;
  std::atomic<int64_t> outstanding_{0};
  std::atomic<int64_t> calls_{0};
  std::atomic<int> waiting_for_results_{0};
};

namespace {

std::string make_temp_directory() {
  std::string pattern = (std::filesystem::temp_directory_path() / "reprise-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw Error("cannot create a temporary directory for TestEnvironment");
  return pattern;
}

TimePoint system_now() { return SystemClock::instance().now(); }

}  // namespace

TestEnvironment::TestEnvironment(TestEnvironmentOptions options)
    : directory_(make_temp_directory()), clock_(system_now()) {
  embedded_ = open_embedded(directory_ + "/test.db", &clock_);
  tracking_ = std::make_shared<TrackingConnection>(embedded_);
  connection_ = tracking_;
  if (options.time_skipping) skipper_ = std::thread([this] { skip_time(); });
}

TestEnvironment::~TestEnvironment() {
  stopping_ = true;
  if (skipper_.joinable()) skipper_.join();
  connection_.reset();
  tracking_.reset();
  embedded_.reset();
  std::error_code ignored;
  std::filesystem::remove_all(directory_, ignored);
}

void TestEnvironment::advance(std::chrono::nanoseconds by) {
  clock_.advance(by);
  embedded_->fire_due_timers();
}

void TestEnvironment::sleep(std::chrono::nanoseconds d) {
  if (!skipper_.joinable()) return advance(d);
  std::unique_lock lock(sleep_mu_);
  sleep_until_ = clock_.now() + d;
  sleep_over_.wait(lock, [this] { return !sleep_until_; });
}

bool TestEnvironment::idle() { return tracking_->outstanding() == 0 && !embedded_->has_pending_tasks(); }

void TestEnvironment::skip_time() {
  using namespace std::chrono_literals;
  // Idle must hold, with no call answered, for this long: a task between
  // leaving its queue and reaching its worker looks idle for a moment.
  constexpr auto kQuiet = 10ms;
  // A plain time point, not a std::optional: g++ -O2 reports the optional's
  // payload as maybe uninitialized (-Wmaybe-uninitialized, under TSan).
  constexpr auto kNotQuiet = std::chrono::steady_clock::time_point::max();
  auto quiet_since = kNotQuiet;
  int64_t calls_then = -1;
  while (!stopping_) {
    std::this_thread::sleep_for(2ms);
    std::optional<TimePoint> sleep_until;
    {
      std::lock_guard lock(sleep_mu_);
      sleep_until = sleep_until_;
    }
    // Time moves only while the test waits for it to.
    const bool test_waits = sleep_until || tracking_->waiting_for_results() > 0;
    if (!test_waits || !idle() || tracking_->calls() != calls_then) {
      quiet_since = kNotQuiet;
      calls_then = tracking_->calls();
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    if (quiet_since == kNotQuiet) quiet_since = now;
    if (now - quiet_since < kQuiet) continue;
    quiet_since = kNotQuiet;
    if (sleep_until && clock_.now() >= *sleep_until) {
      {
        std::lock_guard lock(sleep_mu_);
        sleep_until_.reset();
      }
      sleep_over_.notify_all();
      continue;
    }
    std::optional<TimePoint> target = sleep_until;
    std::optional<TimePoint> next = embedded_->next_timer_time();
    if (next && (!target || *next < *target)) target = *next;
    if (target && *target > clock_.now()) {
      clock_.set(*target);
      embedded_->fire_due_timers();
    }
  }
}

}  // namespace reprise::testing
