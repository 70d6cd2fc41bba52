// A child process for the store's fault tests: a real writer that a test can
// kill at a random moment or at an exact fault point, or starve of disk.
//
//   store_child write DB THREADS EXECUTIONS STEPS [before-commit|after-commit N]
//     (DB: a SQLite file, or a postgresql:// URL)
//     commits STEPS steps of each execution from THREADS threads, printing
//     "ack WORKFLOW_ID STEP" after each acknowledged commit; with a fault
//     point it SIGKILLs itself at the N-th batch reaching that point.
//   store_child fill DB MAX_FILE_BYTES
//     like write, under RLIMIT_FSIZE (0: none, for a small disk), until a
//     commit fails; prints
//     "error CODE MESSAGE" and exits 0.
//   store_child postgres own
//     starts a PostgreSQL of its own as a test binary does (test_postgres.hpp),
//     prints "postgres PID" (the postmaster's), and waits to be killed.
#include <signal.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "any_store.hpp"
#include "store_test_util.hpp"
#include "test_postgres.hpp"

using namespace reprise;
using namespace reprise::engine;

namespace {

std::mutex out_mu;
std::atomic<Store*> opened{nullptr};  // the store of `write`, for its fault hook

void say(const std::string& line) {
  std::lock_guard lock(out_mu);
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

int run_writers(Store& store, int threads, int executions, int steps, size_t padding) {
  std::atomic<bool> failed{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::vector<int64_t> task_of(executions, 0);
      for (int n = 1; n <= steps && !failed; ++n) {
        for (int e = t; e < executions && !failed; e += threads) {
          const ExecutionKey k = testing::key("e-" + std::to_string(e));
          Result<CommitResult> r = store.commit(testing::whole_step(k, n, task_of[e], padding));
          if (!r) {
            failed = true;
            say("error " + std::string(status_code_name(r.status().code())) + " " + r.status().message());
            return;
          }
          task_of[e] = r->task_ids[0];
          say("ack " + k.workflow_id + " " + std::to_string(n));
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: store_child write|fill DB ... | postgres own\n");
    return 2;
  }
  const std::string mode = argv[1];
  const std::string db = argv[2];
  StoreOptions options;
  options.wait_when_full = false;  // the bad-input tests look at the failure itself

  if (mode == "write" && argc >= 6) {
    if (argc == 8) {
      const FaultPoint point =
          std::strcmp(argv[6], "before-commit") == 0 ? FaultPoint::kBeforeCommit : FaultPoint::kAfterCommit;
      const int at = std::atoi(argv[7]);
      auto seen = std::make_shared<std::atomic<int>>(0);
      options.fault_hook = [point, at, seen](FaultPoint p) {
        if (p == point && ++*seen == at) {
          // The transitions of the batches before this one, so the test can
          // tell whether this batch is in the file.
          say("fault-point committed " + std::to_string(testing::writer_stats_of(*opened.load()).transitions));
          ::raise(SIGKILL);
        }
        return Status::ok();
      };
    }
    auto store = testing::open_any_store(db, options);
    if (!store) {
      say("error " + store.status().to_string());
      return 1;
    }
    opened = store->get();
    return run_writers(**store, std::atoi(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]), 0);
  }

  if (mode == "fill" && argc == 4) {
    const unsigned long long max_file_bytes = std::strtoull(argv[3], nullptr, 10);
    if (max_file_bytes > 0) {
      ::signal(SIGXFSZ, SIG_IGN);  // get EFBIG from write() instead of dying
      rlimit limit{};
      limit.rlim_cur = limit.rlim_max = max_file_bytes;
      ::setrlimit(RLIMIT_FSIZE, &limit);
    }
    auto store = SqliteStore::open(db, options);
    if (!store) {
      say("error " + std::string(status_code_name(store.status().code())) + " " + store.status().message());
      return 0;
    }
    return run_writers(**store, 2, 8, 1'000'000, 8'000);
  }
  if (mode == "postgres") {
    std::string why;
    testing::TestPostgres* pg = testing::TestPostgres::get(&why);
    say(pg == nullptr ? "error " + why : "postgres " + std::to_string(pg->pid()));
    while (true) ::pause();
  }
  std::fprintf(stderr, "bad arguments\n");
  return 2;
}
