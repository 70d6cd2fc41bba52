// reprise-blocking: sleeping or waiting on the thread instead of on history.
#include <unistd.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "reprise/workflow.hpp"

std::mutex table_mutex;

reprise::Workflow<void> naps(reprise::WorkflowContext& ctx) {
  std::this_thread::sleep_for(std::chrono::seconds(1));  // expect: reprise-blocking
  usleep(100);                                           // expect: reprise-blocking
  co_await ctx.sleep(std::chrono::seconds(1));
}

reprise::Workflow<int> waits(reprise::WorkflowContext&, std::future<int> f) {
  std::condition_variable cv;
  std::unique_lock lock(table_mutex);  // expect: reprise-blocking
  cv.wait(lock);                       // expect: reprise-blocking
  co_return f.get();                   // expect: reprise-blocking
}

// Locking a global mutex is one finding (blocking), not also a write of the
// global.
reprise::Workflow<void> locks_global(reprise::WorkflowContext&) {
  table_mutex.lock();  // expect: reprise-blocking
  co_return;
}

// Negative: a timer in history.
reprise::Workflow<void> timer(reprise::WorkflowContext& ctx) { co_await ctx.sleep(std::chrono::hours(24)); }
