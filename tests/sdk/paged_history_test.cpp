// A long workflow on a worker with the cache off, so every task replays it
// from the start, through an embedded connection that counts the history
// events the worker is sent. Each workflow or query task comes with one page
// of history and the worker reads the rest through GetHistory as it
// replays: no answer holds the whole history, and no event is read twice
// for one replay.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "forwarding_connection.hpp"
#include "reprise/client.hpp"
#include "reprise/worker.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

inline constexpr Query<int64_t> ticks_done{"ticks_done"};
inline constexpr Signal<int64_t> finish{"finish"};

// Five events a tick: TimerStarted, TimerFired and the next task's three.
// With `wait_at_end` the run then waits for "finish": a query is answered
// only while the workflow function runs.
Workflow<int64_t> ticks(WorkflowContext& ctx, int64_t count, bool wait_at_end) {
  int64_t done = 0;
  ctx.on_query(ticks_done, [&done] { return done; });
  for (int64_t i = 0; i < count; ++i) {
    co_await ctx.sleep(1ms);
    ++done;
  }
  if (wait_at_end) co_return co_await ctx.wait(finish);
  co_return done;
}
inline constexpr WorkflowDef<&ticks> ticks_wf{"ticks"};

constexpr int kPageEvents = 50;
constexpr int64_t kTicks = 70;  // 355 events

// Passes every call through and counts the history events in workflow and
// query tasks and in GetHistory pages.
class CountingConnection final : public ForwardingConnection {
 public:
  explicit CountingConnection(std::shared_ptr<Connection> inner) : ForwardingConnection(std::move(inner)) {}

  std::atomic<int64_t> tasks{0};
  std::atomic<int64_t> task_events{0};     // in the tasks themselves
  std::atomic<int64_t> largest_task{0};    // events in the largest task
  std::atomic<int64_t> paged_events{0};    // read through GetHistory
  std::atomic<int64_t> pages{0};           // GetHistory answers with events
  std::atomic<int64_t> largest_page{0};    // events in the largest of them
  std::atomic<int64_t> pages_needed{0};    // at kPageEvents a page, for the tasks' histories
  std::atomic<int64_t> history_needed{0};  // the tasks' histories, end to end
  std::atomic<int64_t> query_tasks{0};
  std::atomic<int64_t> largest_query_task{0};

  v1::PollWorkflowTaskResponse poll_workflow_task(const v1::PollWorkflowTaskRequest& r) override {
    v1::PollWorkflowTaskResponse task = inner_->poll_workflow_task(r);
    if (task.task_token().empty()) return task;
    const int64_t events = task.history().events_size();
    if (task.queries_size() > 0) {
      ++query_tasks;
      raise(largest_query_task, events);
    } else {
      ++tasks;
      raise(largest_task, events);
      history_needed += task.started_event_id();
      // A cache-off task replays from event 1: what its first page did not
      // hold comes in GetHistory pages of at most r.maximum_page_size().
      const int64_t rest = task.started_event_id() - events;
      pages_needed += (rest + kPageEvents - 1) / kPageEvents;
    }
    task_events += events;
    return task;
  }
  v1::GetHistoryResponse get_history(const v1::GetHistoryRequest& r, std::chrono::seconds timeout) override {
    v1::GetHistoryResponse page = inner_->get_history(r, timeout);
    if (!r.wait_new_event() && page.history().events_size() > 0) {
      paged_events += page.history().events_size();
      ++pages;
      raise(largest_page, page.history().events_size());
    }
    return page;
  }

 private:
  static void raise(std::atomic<int64_t>& max, int64_t value) {
    int64_t seen = max.load();
    while (seen < value && !max.compare_exchange_weak(seen, value)) {
    }
  }
};

struct TempDatabase {
  std::filesystem::path dir;
  TempDatabase() {
    std::string pattern = (std::filesystem::temp_directory_path() / "reprise-paged-XXXXXX").string();
    dir = ::mkdtemp(pattern.data());
  }
  ~TempDatabase() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

class PagedHistory : public ::testing::Test {
 protected:
  void SetUp() override {
    embedded = Connection::embedded((db.dir / "paged.db").string());
    counting = std::make_shared<CountingConnection>(embedded);
    worker = std::make_unique<Worker>(
        counting,
        WorkerOptions{
            .task_queue = "ticks", .workflow_threads = 1, .cache_size = 0, .history_page_events = kPageEvents});
    worker->register_workflow(ticks_wf);
    worker->start();
  }
  void TearDown() override { worker->stop(); }

  TempDatabase db;
  std::shared_ptr<Connection> embedded;  // the client's: only the worker's reads are counted
  std::shared_ptr<CountingConnection> counting;
  std::unique_ptr<Worker> worker;
};

TEST_F(PagedHistory, EachTaskOfALongWorkflowComesWithOnePageAndTheWorkerReadsTheRest) {
  Client client(embedded);
  auto run = client.start(ticks_wf, {.id = "ticks-1", .task_queue = "ticks"}, kTicks, false);
  ASSERT_EQ(run.result(60s), kTicks);
  const int64_t length = run.describe().info().history_length();
  std::printf(
      "%lld events; %lld tasks; sent in tasks %lld (largest %lld), read through GetHistory %lld in %lld pages "
      "(largest %lld)\n",
      static_cast<long long>(length), static_cast<long long>(counting->tasks.load()),
      static_cast<long long>(counting->task_events.load()), static_cast<long long>(counting->largest_task.load()),
      static_cast<long long>(counting->paged_events.load()), static_cast<long long>(counting->pages.load()),
      static_cast<long long>(counting->largest_page.load()));
  ASSERT_GE(length, 300);
  EXPECT_LE(counting->largest_task.load(), kPageEvents) << "a task came with more than one page of history";
  EXPECT_LE(counting->task_events.load(), counting->tasks.load() * kPageEvents);
  // With the cache off each task is a full replay, which must read each of
  // the task's events once: the pages neither miss nor repeat any.
  EXPECT_EQ(counting->task_events.load() + counting->paged_events.load(), counting->history_needed.load());
  // And the rest came a page at a time: the late tasks' replays read several.
  EXPECT_LE(counting->largest_page.load(), kPageEvents) << "a GetHistory answer held more than one page";
  EXPECT_EQ(counting->pages.load(), counting->pages_needed.load());
  EXPECT_GT(counting->pages.load(), counting->tasks.load()) << "the late tasks needed several GetHistory pages";
}

TEST_F(PagedHistory, AQueryOnALongWorkflowIsAnsweredFromPagedHistory) {
  Client client(embedded);
  auto run = client.start(ticks_wf, {.id = "ticks-2", .task_queue = "ticks"}, kTicks, true);
  // Until every tick is done and the history has stopped growing (the run
  // then waits for a signal that never comes).
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  int64_t length = -1;
  while (std::chrono::steady_clock::now() < deadline) {
    if (client.query("ticks-2", ticks_done) == kTicks && run.describe().info().history_length() == length) break;
    length = run.describe().info().history_length();
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_EQ(run.describe().info().history_length(), length) << "the run did not settle";
  const int64_t query_tasks_before = counting->query_tasks.load();
  counting->largest_query_task = 0;
  const int64_t paged_before = counting->paged_events.load();
  const int64_t pages_before = counting->pages.load();
  const int64_t largest_before = counting->largest_page.load();
  EXPECT_EQ(client.query("ticks-2", ticks_done), kTicks);
  EXPECT_EQ(counting->query_tasks.load() - query_tasks_before, 1);
  EXPECT_LE(counting->largest_query_task.load(), kPageEvents) << "the query task came with more than one page";
  EXPECT_EQ(counting->largest_query_task.load() + counting->paged_events.load() - paged_before,
            run.describe().info().history_length())
      << "the query's replay read each event once";
  const int64_t rest = run.describe().info().history_length() - counting->largest_query_task.load();
  EXPECT_EQ(counting->pages.load() - pages_before, (rest + kPageEvents - 1) / kPageEvents)
      << "the query's replay read the rest a page at a time";
  EXPECT_EQ(counting->largest_page.load(), largest_before) << "no page larger than the workflow tasks' pages";
}

}  // namespace
}  // namespace reprise
