// StickyCache: one task at a time holds a run's instance, an instance given
// back is found by the run's next task, a run is replaced and never
// duplicated, and the bounds evict the least recently used.
#include "worker/sticky_cache.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace reprise {
namespace {

using namespace std::chrono_literals;

Workflow<int64_t> idle(WorkflowContext& ctx) {
  co_await ctx.sleep(1h);
  co_return 0;
}

std::unique_ptr<worker::WorkflowInstance> instance() {
  return std::make_unique<worker::WorkflowInstance>("idle", worker::make_starter<&idle>("idle"));
}

TEST(StickyCache, ARunIsHeldByOneTaskAtATime) {
  worker::StickyCache cache(10, 1 << 20);
  auto first = cache.acquire("run-1");
  std::atomic<bool> first_released{false};
  std::atomic<bool> second_saw_release{false};
  std::thread second_task([&] {
    auto second = cache.acquire("run-1");  // waits for the first task
    second_saw_release = first_released.load();
    EXPECT_NE(second.take(), nullptr) << "the first task's instance, given back";
  });
  auto other_run = cache.acquire("run-2");  // another run is not held up
  std::this_thread::sleep_for(50ms);
  first_released = true;
  first.release(instance());
  second_task.join();
  EXPECT_TRUE(second_saw_release.load());
}

TEST(StickyCache, AnInstanceGivenBackIsReplacedNotDuplicated) {
  worker::StickyCache cache(2, 1 << 20);
  auto kept = instance();
  worker::WorkflowInstance* const kept_address = kept.get();
  cache.acquire("run-1").release(std::move(kept));
  {
    auto lease = cache.acquire("run-1");
    EXPECT_EQ(lease.take().get(), kept_address);
    EXPECT_EQ(cache.size(), 0u) << "taken out while the task holds it";
    lease.release(instance());
  }
  cache.acquire("run-1").release(instance());  // a miss that gives one back: replaces
  EXPECT_EQ(cache.size(), 1u);
  // Two more runs overflow the bound of two: run-1, least recently used,
  // goes once and only once (a stale second LRU node crashed here).
  cache.acquire("run-2").release(instance());
  cache.acquire("run-3").release(instance());
  cache.acquire("run-4").release(instance());
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.acquire("run-1").take(), nullptr);
  EXPECT_EQ(cache.acquire("run-2").take(), nullptr);
  EXPECT_NE(cache.acquire("run-4").take(), nullptr);
}

TEST(StickyCache, BytesBoundAndEviction) {
  const size_t one = instance()->approximate_bytes();
  worker::StickyCache by_bytes(100, one * 2);
  for (const char* run : {"a", "b", "c"}) by_bytes.acquire(run).release(instance());
  EXPECT_EQ(by_bytes.size(), 2u);
  EXPECT_LE(by_bytes.bytes(), one * 2);
  EXPECT_EQ(by_bytes.acquire("a").take(), nullptr) << "the bytes bound evicts the least recently used";
  {
    auto touched = by_bytes.acquire("b");  // b is used again: c is now the least recent
    auto b = touched.take();
    ASSERT_NE(b, nullptr);
    touched.release(std::move(b));
  }
  by_bytes.acquire("d").release(instance());
  EXPECT_EQ(by_bytes.size(), 2u);
  EXPECT_EQ(by_bytes.acquire("c").take(), nullptr);
  {
    auto kept = by_bytes.acquire("b");
    auto b = kept.take();
    EXPECT_NE(b, nullptr) << "the run used most recently stays";
    kept.release(std::move(b));
  }
  by_bytes.evict("d");
  EXPECT_EQ(by_bytes.size(), 1u);
  EXPECT_EQ(by_bytes.bytes(), one);
  worker::StickyCache off(0, 1 << 20);
  off.acquire("a").release(instance());
  EXPECT_EQ(off.size(), 0u) << "a cache of size 0 keeps nothing";
}

}  // namespace
}  // namespace reprise
