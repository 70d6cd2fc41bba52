#include "engine/matching/matching.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "engine/deadline_scheduler.hpp"

namespace reprise::engine {
namespace {

using namespace std::chrono_literals;

TaskRecord task(int64_t id, const std::string& queue = "orders", TaskKind kind = TaskKind::kActivityTask) {
  TaskRecord t;
  t.task_id = id;
  t.kind = kind;
  t.queue = queue;
  t.execution = {"default", "wf-" + std::to_string(id), "run"};  // namespace "default"
  return t;
}

const QueueKey kOrders{"default", TaskKind::kActivityTask, "orders"};

auto far() { return std::chrono::steady_clock::now() + 60s; }

// Collects what a poll was answered with.
struct Answer {
  std::promise<std::optional<TaskRecord>> promise;
  std::future<std::optional<TaskRecord>> future = promise.get_future();
  PollCallback callback() {
    return [this](std::optional<TaskRecord> t) { promise.set_value(std::move(t)); };
  }
  bool ready() { return future.wait_for(0s) == std::future_status::ready; }
};

TEST(Matching, ARemovedTaskIsNotHandedOut) {
  DeadlineScheduler deadlines;
  Matching m(deadlines);
  m.add(task(1));
  m.add(task(2));
  EXPECT_TRUE(m.remove(kOrders, 1));
  EXPECT_FALSE(m.remove(kOrders, 1)) << "only once";
  Answer a;
  m.poll(kOrders, far(), a.callback());
  EXPECT_EQ(a.future.get()->task_id, 2);
  EXPECT_FALSE(m.remove(kOrders, 2)) << "a poller has it";
}

TEST(Matching, QueuedTasksGoToPollersOldestFirst) {
  DeadlineScheduler deadlines;
  Matching m(deadlines);
  m.add(task(1));
  m.add(task(2));
  EXPECT_EQ(m.backlog(kOrders), 2u);
  Answer a, b;
  m.poll(kOrders, far(), a.callback());
  m.poll(kOrders, far(), b.callback());
  EXPECT_EQ(a.future.get()->task_id, 1);
  EXPECT_EQ(b.future.get()->task_id, 2);
  EXPECT_EQ(m.backlog(kOrders), 0u);
}

TEST(Matching, ParkedPollersAreServedInArrivalOrder) {
  DeadlineScheduler deadlines;
  Matching m(deadlines);
  Answer first, second;
  m.poll(kOrders, far(), first.callback());
  m.poll(kOrders, far(), second.callback());
  EXPECT_FALSE(first.ready());
  m.add(task(7));
  EXPECT_EQ(first.future.get()->task_id, 7);
  EXPECT_FALSE(second.ready());
  m.add(task(8));
  EXPECT_EQ(second.future.get()->task_id, 8);
}

TEST(Matching, QueuesAreSeparatedByNamespaceKindAndName) {
  DeadlineScheduler deadlines;
  Matching m(deadlines);
  Answer workflow_poll, other_queue, other_namespace;
  m.poll({"default", TaskKind::kWorkflowTask, "orders"}, far(), workflow_poll.callback());
  m.poll({"default", TaskKind::kActivityTask, "billing"}, far(), other_queue.callback());
  m.poll({"other", TaskKind::kActivityTask, "orders"}, far(), other_namespace.callback());
  m.add(task(1));  // an activity task on "orders" in "default"
  EXPECT_FALSE(workflow_poll.ready());
  EXPECT_FALSE(other_queue.ready());
  EXPECT_FALSE(other_namespace.ready());
  EXPECT_EQ(m.backlog(kOrders), 1u);
}

TEST(Matching, PollTimesOutEmpty) {
  DeadlineScheduler deadlines;
  Matching m(deadlines);
  Answer a;
  m.poll(kOrders, std::chrono::steady_clock::now() + 20ms, a.callback());
  EXPECT_FALSE(a.future.get().has_value());
  m.add(task(3));
  EXPECT_EQ(m.backlog(kOrders), 1u) << "an expired poll does not swallow a later task";
}

TEST(Matching, CancelEndsAParkedPoll) {
  DeadlineScheduler deadlines;
  Matching m(deadlines);
  Answer a;
  const auto id = m.poll(kOrders, far(), a.callback());
  EXPECT_TRUE(m.cancel(id));
  EXPECT_FALSE(a.future.get().has_value());
  EXPECT_FALSE(m.cancel(id));
  m.add(task(4));
  EXPECT_EQ(m.backlog(kOrders), 1u);
}

TEST(Matching, DuplicateTaskIdsAreIgnored) {
  DeadlineScheduler deadlines;
  Matching m(deadlines);
  m.add(task(5));
  m.add(task(5));
  EXPECT_EQ(m.backlog(kOrders), 1u);
}

// Every worker process polls sticky queues of its own: a queue with no task
// and no poll left is dropped, whichever way it emptied.
TEST(Matching, IdleQueuesAreDropped) {
  DeadlineScheduler deadlines;
  Matching m(deadlines);
  for (int i = 0; i < 100; ++i) {
    const std::string queue = "worker-" + std::to_string(i);
    const QueueKey key{"default", TaskKind::kActivityTask, queue};
    Answer timed_out, canceled, handed, taken;
    m.poll(key, std::chrono::steady_clock::now() + 1ms, timed_out.callback());  // its deadline passes
    ASSERT_EQ(timed_out.future.wait_for(5s), std::future_status::ready);
    m.cancel(m.poll(key, far(), canceled.callback()));  // its poller goes away
    m.poll(key, far(), handed.callback());              // a task comes to it
    m.add(task(4 * i + 1, queue));
    m.add(task(4 * i + 2, queue));  // queued, then taken
    m.poll(key, far(), taken.callback());
    m.add(task(4 * i + 3, queue));  // queued, then removed
    m.remove(key, 4 * i + 3);
    ASSERT_TRUE(canceled.ready() && handed.ready() && taken.ready());
  }
  EXPECT_EQ(m.queue_count(), 0u);
}

TEST(Matching, ShutdownReleasesEveryPoller) {
  DeadlineScheduler deadlines;
  Matching m(deadlines);
  Answer a, b;
  m.poll(kOrders, far(), a.callback());
  m.shutdown();
  EXPECT_FALSE(a.future.get().has_value());
  m.poll(kOrders, far(), b.callback());
  EXPECT_FALSE(b.future.get().has_value());
}

TEST(Matching, EveryTaskReachesExactlyOnePollerUnderConcurrency) {
  DeadlineScheduler deadlines;
  Matching m(deadlines);
  constexpr int kTasks = 2000;
  std::atomic<int> received{0};
  std::vector<std::atomic<int>> seen(kTasks + 1);
  std::atomic<bool> done{false};
  std::vector<std::thread> pollers;
  for (int p = 0; p < 4; ++p) {
    pollers.emplace_back([&] {
      while (!done) {
        std::promise<void> answered;
        m.poll(kOrders, std::chrono::steady_clock::now() + 50ms, [&](std::optional<TaskRecord> t) {
          if (t) {
            seen[t->task_id]++;
            received++;
          }
          answered.set_value();
        });
        answered.get_future().wait();
      }
    });
  }
  std::thread adder([&] {
    for (int i = 1; i <= kTasks; ++i) m.add(task(i));
  });
  adder.join();
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  while (received < kTasks && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(1ms);
  done = true;
  for (auto& t : pollers) t.join();
  EXPECT_EQ(received, kTasks);
  for (int i = 1; i <= kTasks; ++i) EXPECT_EQ(seen[i], 1) << i;
}

}  // namespace
}  // namespace reprise::engine
