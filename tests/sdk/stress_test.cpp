// Many workflows against a real reprise-server, with signals, queries,
// timers and cancels racing, on workers with the cache on, off and tiny (1),
// with 2 workflow threads and with 8. Each workflow records the sequence
// numbers of the signals it consumed; the test checks every workflow's
// result against what it sent: all of them, in order, once each (a canceled
// workflow: the first k of them, k at most what was sent), and every query
// answer against what had been sent by then.
//
// The run is bounded (REPRISE_STRESS_SECONDS of sending per configuration,
// 4 by default) and random: the seed is printed, and REPRISE_STRESS_SEED
// replays it.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <thread>

#include "../server/server_harness.hpp"
#include "reprise/client.hpp"
#include "reprise/worker.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

inline constexpr Signal<int64_t> numbered{"numbered"};  // its sequence number, from 1
inline constexpr Signal<int64_t> finish{"finish"};      // how many numbered signals were sent
inline constexpr Query<int64_t> consumed{"consumed"};

struct Outcome {
  std::vector<int64_t> received;  // sequence numbers, in the order consumed
  int64_t timers_fired = 0;
  bool canceled = false;
  MSGPACK_DEFINE_MAP(received, timers_fired, canceled);
};

// Waits for numbered signals with a short timer racing each wait (and the
// finish signal racing both until it comes), so waits are dropped with and
// without values; ends once it has consumed as many as `finish` announced,
// or when canceled.
Workflow<Outcome> racer(WorkflowContext& ctx) {
  Outcome out;
  ctx.on_query(consumed, [&out] { return static_cast<int64_t>(out.received.size()); });
  std::optional<int64_t> total;
  try {
    while (!total || static_cast<int64_t>(out.received.size()) < *total) {
      auto next = ctx.wait(numbered);
      auto tick = ctx.sleep(std::chrono::milliseconds(10 + ctx.random() % 50));
      size_t winner = 0;
      if (total) {
        winner = co_await any(next, tick);
      } else {
        auto announced = ctx.wait(finish);
        winner = co_await any(next, tick, announced);
        if (winner == 2) total = co_await announced;
      }
      if (winner == 0) out.received.push_back(co_await next);
      if (winner == 1) {
        co_await tick;  // throws once the workflow is canceled, like the others
        ++out.timers_fired;
      }
    }
  } catch (const CanceledError&) {
    out.canceled = true;
  }
  co_return out;
}
inline constexpr WorkflowDef<&racer> racer_wf{"racer"};

struct Config {
  const char* name;
  int cache_size;
  int workflow_threads;
};

std::string config_name(const ::testing::TestParamInfo<Config>& info) { return info.param.name; }

uint64_t seed_for_run() {
  if (const char* given = std::getenv("REPRISE_STRESS_SEED")) return std::strtoull(given, nullptr, 10);
  return std::random_device()() * uint64_t{0x9e3779b97f4a7c15} ^ std::random_device()();
}

std::chrono::seconds sending_time() {
  const char* given = std::getenv("REPRISE_STRESS_SECONDS");
  return std::chrono::seconds(given != nullptr ? std::atoi(given) : 4);
}

// What the test did to one workflow.
struct Driven {
  std::string id;
  int64_t sent = 0;  // numbered signals the server acknowledged
  bool cancel_sent = false;
  std::string error;  // the first thing that went wrong, if any
};

class Stress : public ::testing::TestWithParam<Config> {};

TEST_P(Stress, SignalsQueriesTimersAndCancelsRaceAndNoSignalIsLostOrDoubled) {
  const Config config = GetParam();
  const uint64_t seed = seed_for_run();
  std::printf("seed=%llu (REPRISE_STRESS_SEED=%llu replays it)\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  std::fflush(stdout);

  TempDir dir;
  Server server(dir.file("stress.db"));
  auto connection = Connection::remote(server.address());
  Worker worker(connection, {.task_queue = "stress",
                             .workflow_threads = config.workflow_threads,
                             .workflow_pollers = 2,
                             .cache_size = config.cache_size,
                             .cache_bytes = size_t{64} << 20});
  worker.register_workflow(racer_wf);
  worker.start();

  constexpr int kWorkflows = 12;
  constexpr int kDrivers = 4;
  Client client(connection);
  std::vector<Driven> driven(kWorkflows);
  std::vector<WorkflowHandle<Outcome>> runs;
  for (int i = 0; i < kWorkflows; ++i) {
    driven[i].id = std::string(config.name) + "-" + std::to_string(i);
    runs.push_back(client.start(racer_wf, {.id = driven[i].id, .task_queue = "stress"}));
  }

  // Each driver owns every kDrivers-th workflow: it signals them in order,
  // queries them, and cancels one now and then.
  const auto stop_sending = std::chrono::steady_clock::now() + sending_time();
  std::vector<std::thread> drivers;
  for (int d = 0; d < kDrivers; ++d) {
    drivers.emplace_back([&, d] {
      std::mt19937_64 random(seed + d);
      while (std::chrono::steady_clock::now() < stop_sending) {
        const size_t index = d + kDrivers * (random() % (kWorkflows / kDrivers));
        Driven& w = driven[index];
        const int action = static_cast<int>(random() % 100);
        try {
          if (action < 80) {
            if (!w.cancel_sent) {
              client.signal(w.id, numbered, w.sent + 1);
              ++w.sent;
            }
          } else if (action < 99) {
            const int64_t seen = client.query(w.id, consumed);
            if (seen < 0 || seen > w.sent) {
              if (w.error.empty())
                w.error = "query says " + std::to_string(seen) + " consumed of " + std::to_string(w.sent) + " sent";
            }
          } else if (!w.cancel_sent) {
            runs[index].cancel();
            w.cancel_sent = true;
          }
        } catch (const std::exception& e) {
          // A canceled workflow may have closed: signals to it fail.
          if (!w.cancel_sent && w.error.empty()) w.error = e.what();
        }
        std::this_thread::sleep_for(std::chrono::microseconds(2000 + random() % 8000));
      }
      for (int i = d; i < kWorkflows; i += kDrivers) {
        if (driven[i].cancel_sent) continue;
        try {
          client.signal(driven[i].id, finish, driven[i].sent);
        } catch (const std::exception& e) {
          if (driven[i].error.empty()) driven[i].error = std::string("finish: ") + e.what();
        }
      }
    });
  }
  for (auto& t : drivers) t.join();

  int64_t signals = 0;
  int64_t timers = 0;
  for (int i = 0; i < kWorkflows; ++i) {
    const Driven& w = driven[i];
    EXPECT_EQ(w.error, "") << w.id;
    Outcome out;
    try {
      out = runs[i].result(60s);
    } catch (const std::exception& e) {
      ADD_FAILURE() << w.id << ": no result: " << e.what();
      continue;
    }
    EXPECT_EQ(out.canceled, w.cancel_sent) << w.id;
    const int64_t k = static_cast<int64_t>(out.received.size());
    if (w.cancel_sent) {
      EXPECT_LE(k, w.sent) << w.id << " consumed a signal nobody sent";
    } else {
      EXPECT_EQ(k, w.sent) << w.id << " lost or doubled a signal";
    }
    for (int64_t n = 0; n < k; ++n) {
      if (out.received[n] != n + 1) {
        ADD_FAILURE() << w.id << ": signal " << n + 1 << " consumed as " << out.received[n]
                      << " (lost, doubled or reordered)";
        break;
      }
    }
    signals += k;
    timers += out.timers_fired;
  }
  worker.stop();
  std::printf("%s: %d workflows consumed %lld signals, %lld timers won their race\n", config.name, kWorkflows,
              static_cast<long long>(signals), static_cast<long long>(timers));
}

INSTANTIATE_TEST_SUITE_P(Caches, Stress,
                         ::testing::Values(Config{"cache_on_2_threads", 1000, 2}, Config{"cache_on_8_threads", 1000, 8},
                                           Config{"cache_off_2_threads", 0, 2}, Config{"cache_off_8_threads", 0, 8},
                                           Config{"cache_of_1_2_threads", 1, 2}, Config{"cache_of_1_8_threads", 1, 8}),
                         config_name);

}  // namespace
}  // namespace reprise
