// Every blocking pattern of lint/rules.cpp, one call per line (reprise-blocking).
#include <pthread.h>
#include <semaphore.h>
#include <unistd.h>

#include <barrier>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <future>
#include <latch>
#include <mutex>
#include <semaphore>
#include <shared_mutex>
#include <thread>

#include "reprise/workflow.hpp"

reprise::Workflow<void> sleeps(reprise::WorkflowContext&) {
  std::this_thread::sleep_for(std::chrono::milliseconds(1));               // expect: reprise-blocking
  std::this_thread::sleep_until(std::chrono::steady_clock::time_point{});  // expect: reprise-blocking
  std::this_thread::yield();                                               // expect: reprise-blocking
  sleep(1);                                                                // expect: reprise-blocking
  usleep(1);                                                               // expect: reprise-blocking
  timespec ts{0, 1};
  nanosleep(&ts, nullptr);                            // expect: reprise-blocking
  clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, nullptr);  // expect: reprise-blocking
  co_return;
}

reprise::Workflow<void> locks(reprise::WorkflowContext&) {
  std::mutex m;
  std::timed_mutex tm;
  std::recursive_mutex rm;
  std::shared_mutex sm;
  m.lock();  // expect: reprise-blocking
  m.unlock();
  rm.lock();  // expect: reprise-blocking
  rm.unlock();
  sm.lock_shared();  // expect: reprise-blocking
  sm.unlock_shared();
  if (m.try_lock()) m.unlock();                               // expect: reprise-blocking
  if (tm.try_lock_for(std::chrono::seconds(1))) tm.unlock();  // expect: reprise-blocking
  {
    std::lock_guard<std::mutex> guard(m);  // expect: reprise-blocking
  }
  {
    std::unique_lock<std::mutex> lock(m);  // expect: reprise-blocking
    lock.unlock();
    lock.lock();  // expect: reprise-blocking
  }
  {
    std::scoped_lock both(m, rm);  // expect: reprise-blocking
  }
  {
    std::shared_lock reader(sm);  // expect: reprise-blocking
  }
  std::lock(m, rm);  // expect: reprise-blocking
  m.unlock();
  rm.unlock();
  co_return;
}

// std::future's and std::shared_future's wait(), wait_for() and wait_until()
// are declared in libstdc++'s base std::__basic_future.
reprise::Workflow<int> waits_on_everything(reprise::WorkflowContext&, std::future<int> f,
                                           std::shared_future<int> shared) {
  std::mutex m;
  std::condition_variable cv;
  std::condition_variable_any cv_any;
  std::unique_lock<std::mutex> lock(m);                        // expect: reprise-blocking
  cv.wait_for(lock, std::chrono::seconds(1));                  // expect: reprise-blocking
  cv_any.wait_for(lock, std::chrono::seconds(1));              // expect: reprise-blocking
  f.wait();                                                    // expect: reprise-blocking
  f.wait_for(std::chrono::seconds(1));                         // expect: reprise-blocking
  shared.wait_until(std::chrono::steady_clock::time_point{});  // expect: reprise-blocking
  int sum = f.get();                                           // expect: reprise-blocking
  sum += shared.get();                                         // expect: reprise-blocking
  std::counting_semaphore<4> slots(1);
  slots.acquire();  // expect: reprise-blocking
  std::latch done(1);
  done.wait();             // expect: reprise-blocking
  done.arrive_and_wait();  // expect: reprise-blocking
  std::barrier phase(1);
  phase.arrive_and_wait();  // expect: reprise-blocking
  co_return sum;
}

reprise::Workflow<void> joins(reprise::WorkflowContext&, std::thread t, std::jthread jt, pthread_t pt,
                              pthread_mutex_t* pm, pthread_cond_t* pc, sem_t* sem) {
  t.join();                   // expect: reprise-blocking
  jt.join();                  // expect: reprise-blocking
  pthread_join(pt, nullptr);  // expect: reprise-blocking
  pthread_mutex_lock(pm);     // expect: reprise-blocking
  pthread_cond_wait(pc, pm);  // expect: reprise-blocking
  timespec deadline{};
  pthread_cond_timedwait(pc, pm, &deadline);  // expect: reprise-blocking
  sem_wait(sem);                              // expect: reprise-blocking
  co_return;
}

// Negative: releasing a lock never blocks.
reprise::Workflow<void> releases(reprise::WorkflowContext& ctx, std::mutex* m) {
  m->unlock();
  co_await ctx.sleep(std::chrono::seconds(1));
}
