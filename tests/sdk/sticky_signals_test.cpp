// The sticky cache under a burst of signals, on an embedded connection whose
// answers to workflow tasks come back late (as over a slow network): the
// server hands out a run's next task while the worker is still waiting for
// the answer to the last one. The run's instance must be back in the cache
// by then (not replayed from history on another thread, not put in the
// cache twice), and every signal must arrive once, in the order it was sent.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <thread>

#include "forwarding_connection.hpp"
#include "reprise/client.hpp"
#include "reprise/worker.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

inline constexpr Signal<int64_t> add{"add"};

// The values of `count` signals, in the order the workflow received them.
Workflow<std::string> signals_in_order(WorkflowContext& ctx, int64_t count) {
  std::string received;
  for (int64_t i = 0; i < count; ++i) received += std::to_string(co_await ctx.wait(add)) + " ";
  co_return received;
}
inline constexpr WorkflowDef<&signals_in_order> in_order_wf{"signals_in_order"};

// Passes every call through; workflow-task answers return `delay` after
// the engine took them (`before_answer` runs first, if set), and history
// fetches (a sticky task that missed the cache and replays) and workflow
// tasks the worker failed are counted.
class SlowAnswers final : public ForwardingConnection {
 public:
  SlowAnswers(std::shared_ptr<Connection> inner, std::chrono::milliseconds delay)
      : ForwardingConnection(std::move(inner)), delay_(delay) {}
  int history_fetches() const { return history_fetches_.load(); }
  int failed_tasks() const { return failed_tasks_.load(); }
  std::function<void(const v1::CompleteWorkflowTaskRequest&)> before_answer;

  v1::CompleteWorkflowTaskResponse complete_workflow_task(const v1::CompleteWorkflowTaskRequest& r) override {
    if (before_answer) before_answer(r);
    v1::CompleteWorkflowTaskResponse out = inner_->complete_workflow_task(r);
    std::this_thread::sleep_for(delay_);
    return out;
  }
  v1::GetHistoryResponse get_history(const v1::GetHistoryRequest& r, std::chrono::seconds timeout) override {
    ++history_fetches_;
    return inner_->get_history(r, timeout);
  }
  void fail_workflow_task(const v1::FailWorkflowTaskRequest& r) override {
    ++failed_tasks_;
    inner_->fail_workflow_task(r);
  }

 private:
  std::chrono::milliseconds delay_;
  std::atomic<int> history_fetches_{0};
  std::atomic<int> failed_tasks_{0};
};

struct TempDatabase {
  std::filesystem::path dir;
  TempDatabase() {
    std::string pattern = (std::filesystem::temp_directory_path() / "reprise-sticky-XXXXXX").string();
    dir = ::mkdtemp(pattern.data());
  }
  ~TempDatabase() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

TEST(StickyCache, ARunReceivingSignalsFastIsServedFromTheCacheWithEverySignalCountedOnce) {
  TempDatabase db;
  auto embedded = Connection::embedded((db.dir / "sticky.db").string());
  auto slow = std::make_shared<SlowAnswers>(embedded, 20ms);
  Worker worker(slow, {.task_queue = "sums", .workflow_threads = 4, .workflow_pollers = 2});
  worker.register_workflow(in_order_wf);

  constexpr int64_t kRuns = 2;
  constexpr int64_t kSignals = 150;
  // The first kBurst signals are sent before the worker starts, so each
  // run's first task holds them all and the code finds them buffered. The
  // steady stream alone seldom leaves two values buffered at once, and with
  // one any order looks right: the test passed with the inbox handing out
  // the newest buffered value first.
  constexpr int64_t kBurst = 5;
  Client client(embedded);
  std::vector<WorkflowHandle<std::string>> runs;
  for (int64_t r = 0; r < kRuns; ++r) {
    runs.push_back(client.start(in_order_wf, {.id = "sum-" + std::to_string(r), .task_queue = "sums"}, kSignals));
  }
  std::string sent;
  for (int64_t i = 1; i <= kSignals; ++i) {
    if (i == kBurst + 1) worker.start();
    for (int64_t r = 0; r < kRuns; ++r) client.signal("sum-" + std::to_string(r), add, i);
    sent += std::to_string(i) + " ";
    if (i > kBurst) std::this_thread::sleep_for(1ms);  // a steady stream, so each run gets many tasks
  }
  for (auto& run : runs) EXPECT_EQ(run.result(30s), sent) << "a signal lost, doubled or out of order";
  worker.stop();
  EXPECT_LE(slow->history_fetches(), 1) << "sticky tasks replayed from history instead of using the cache";
}

Workflow<int64_t> first_signal_or_zero(WorkflowContext&) { co_return 0; }
inline constexpr WorkflowDef<&first_signal_or_zero> closes_at_once_wf{"closes_at_once"};

TEST(StickyCache, AnAnswerTheServerSetAsideForNewEventsIsNotFailedAgain) {
  TempDatabase db;
  auto embedded = Connection::embedded((db.dir / "aside.db").string());
  auto observed = std::make_shared<SlowAnswers>(embedded, 0ms);
  Client client(embedded);
  // A signal lands while the workflow's first task runs, just before its
  // answer closes the run: the server records WorkflowTaskFailed
  // (UNHANDLED_EVENTS), refuses the answer with ABORTED and
  // hands out a fresh task, which closes the run.
  std::atomic<bool> signaled{false};
  observed->before_answer = [&](const v1::CompleteWorkflowTaskRequest&) {
    if (!signaled.exchange(true)) client.signal("aside", add, int64_t{7});
  };
  Worker worker(observed, {.task_queue = "aside", .workflow_threads = 1, .workflow_pollers = 1});
  worker.register_workflow(closes_at_once_wf);
  worker.start();
  auto run = client.start(closes_at_once_wf, {.id = "aside", .task_queue = "aside"});
  EXPECT_EQ(run.result(30s), 0);
  worker.stop();
  EXPECT_TRUE(signaled);
  EXPECT_EQ(observed->failed_tasks(), 0) << "the server had failed the task itself; failing it again is refused";
}

}  // namespace
}  // namespace reprise
