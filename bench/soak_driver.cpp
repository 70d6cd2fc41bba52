// soak_driver: a long steady mixed load against a real reprise-server, to see
// whether memory, file descriptors, the database or latency grow over time.
//
//   soak_driver --server PATH/reprise-server --examples PATH/reprise-examples --out DIR
//               [--minutes 60] [--rate 10] [--sample-seconds 60] [--threads 64]
//               [--retention 3m] [--retention-sweep-interval 15s]
//
// Starts the server on a fresh DIR/soak.db with a short retention, two
// `reprise-examples worker` processes, and starts `rate` workflows a second
// from the examples (hello, stackful hello, shipping with a timer, an expense
// approved by signal after a query, one that expires on its timer, fan-out to
// child workflows, a loop that continues as new, a saga that succeeds or
// compensates), checking every result. Every `sample-seconds` it writes a row
// of DIR/soak.csv: RSS and open fds of each process, database and WAL size,
// workflows done, in flight and waiting to start (driver side: the server
// exposes no queue depths), p50/p99 start-to-close latency of the interval,
// runs deleted by retention. At the end DIR/soak.md holds the table.
// Exit status 0 only when every workflow ended as it should.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

#include "child_process.hpp"
#include "examples/examples.hpp"
#include "tools/command_line/command_line.hpp"

using namespace reprise;
using namespace examples;
using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

namespace {

// The server and workers, with stderr kept in a log; stopped with SIGTERM
// (SIGKILL after 30 s) when the soak ends.
class Process : public engine::testing::ChildProcess {
 public:
  Process(const std::vector<std::string>& args, const std::string& log_path) : ChildProcess(args, log_path) {}
  ~Process() { stop(30s); }
};

int64_t rss_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

int64_t open_fds(pid_t pid) {
  DIR* dir = ::opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (dir == nullptr) return -1;
  int64_t n = 0;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(dir);
  return n;
}

int64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

// The mix, one slot per start: hello-style workflows most often, every kind
// at least once in every 12 starts.
enum class Kind { kHello, kHelloStackful, kShipping, kExpenseSignal, kExpenseExpire, kFanOut, kLoop, kSaga };
const Kind kMix[] = {Kind::kHello,         Kind::kShipping, Kind::kExpenseSignal, Kind::kHello,
                     Kind::kFanOut,        Kind::kSaga,     Kind::kHelloStackful, Kind::kShipping,
                     Kind::kExpenseSignal, Kind::kLoop,     Kind::kHello,         Kind::kExpenseExpire};

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kHello:
      return "hello";
    case Kind::kHelloStackful:
      return "hello_stackful";
    case Kind::kShipping:
      return "shipping";
    case Kind::kExpenseSignal:
      return "expense_signal";
    case Kind::kExpenseExpire:
      return "expense_expire";
    case Kind::kFanOut:
      return "fan_out";
    case Kind::kLoop:
      return "loop";
    case Kind::kSaga:
      return "saga";
  }
  return "?";
}

// Runs one workflow of `kind` to its end; "" when it ended as it should,
// otherwise what went wrong. A workflow not closed within `wait` is lost.
std::string run_one(Client& client, const std::string& queue, Kind kind, int64_t seq, std::chrono::milliseconds wait) {
  const std::string n = std::to_string(seq);
  const std::string id = std::string("soak-") + kind_name(kind) + "-" + n;
  const StartOptions start{.id = id, .task_queue = queue};
  auto expect = [](const auto& got, const auto& want) -> std::string {
    if (got == want) return "";
    std::ostringstream s;
    s << "wrong result: got '" << got << "', want '" << want << "'";
    return s.str();
  };
  try {
    switch (kind) {
      case Kind::kHello:
        return expect(client.start(hello_wf, start, "soak " + n).result(wait), "Hello, soak " + n + "!");
      case Kind::kHelloStackful:
        return expect(client.start(hello_stackful_wf, start, "stack " + n).result(wait), "Hello, stack " + n + "!");
      case Kind::kShipping:  // a 200 ms timer, then two activities
        return expect(client.start(shipping_v2_wf, start, "order-" + n).result(wait),
                      "order-" + n + " looks fine, shipped order-" + n);
      case Kind::kExpenseSignal: {
        auto run = client.start(expense_wf, start, "item-" + n, int64_t{10 * 60 * 1000});
        const std::string waiting = "waiting for a decision on item-" + n;
        std::string status;
        for (const auto until = Steady::now() + 30s; status != waiting && Steady::now() < until;) {
          try {
            status = client.query(id, expense_status);
          } catch (const RpcError&) {
            std::this_thread::sleep_for(20ms);  // its first workflow task has not run yet
          }
        }
        if (status != waiting) return "query: got '" + status + "', want '" + waiting + "'";
        const bool approved = seq % 2 == 0;
        client.signal(id, decide, Decision{"dana-" + n, approved});
        return expect(run.result(wait),
                      "item-" + n + ": " + (approved ? "approved by " : "rejected by ") + "dana-" + n);
      }
      case Kind::kExpenseExpire:  // nobody decides: the 300 ms wait runs out
        return expect(client.start(expense_wf, start, "chair-" + n, int64_t{300}).result(wait),
                      "chair-" + n + ": expired");
      case Kind::kFanOut: {
        const std::vector<std::string> parts = {"one two three", "four five", std::string(seq % 5 + 1, 'x')};
        return expect(client.start(count_all_wf, start, parts).result(wait), int64_t{6});
      }
      case Kind::kLoop: {  // 6 rounds, 2 per run: two continue-as-new
        const Tally t = client.start(feed_loop_wf, start, Tally{}, int64_t{6}, int64_t{2}).result(wait);
        return expect(t.rounds * 10 + t.runs, int64_t{63});
      }
      case Kind::kSaga: {
        if (seq % 2 == 0) {
          return expect(client.start(transfer_wf, start, Transfer{"alice", "bob", seq}).result(wait),
                        "withdrew " + n + " from alice, deposited " + n + " to bob");
        }
        try {
          client.start(transfer_wf, start, Transfer{"alice", "closed-carol", seq}).result(wait);
          return "a transfer to a closed account succeeded";
        } catch (const WorkflowFailedError& e) {
          return expect(e.type(), std::string("TransferFailed"));
        }
      }
    }
  } catch (const ResultTimeoutError& e) {
    return std::string("lost (not closed in time): ") + e.what();
  } catch (const std::exception& e) {
    return std::string("error: ") + e.what();
  }
  return "unknown kind";
}

struct Sample {
  double t_s = 0;
  int64_t server_rss = 0, server_fds = 0;
  int64_t worker_rss[2] = {0, 0}, worker_fds[2] = {0, 0};
  int64_t db_bytes = 0, wal_bytes = 0;
  int64_t started = 0, completed = 0, failed = 0, in_flight = 0, backlog = 0;
  int64_t done_interval = 0;
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
  int64_t deleted = 0, server_errors = 0;
  bool drain = false;  // taken once the last workflows closed, after the last interval
};

const char* kCsvHeader =
    "t_s,server_rss_kib,server_fds,worker1_rss_kib,worker1_fds,worker2_rss_kib,worker2_fds,db_bytes,wal_bytes,"
    "started,completed,failed,in_flight,backlog,done_interval,p50_ms,p99_ms,max_ms,retention_deleted,"
    "server_error_lines,drain";

std::string csv_row(const Sample& s) {
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "%.0f,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%.1f,%.1f,%.1f,%lld,%lld,%d", s.t_s,
      (long long)s.server_rss, (long long)s.server_fds, (long long)s.worker_rss[0], (long long)s.worker_fds[0],
      (long long)s.worker_rss[1], (long long)s.worker_fds[1], (long long)s.db_bytes, (long long)s.wal_bytes,
      (long long)s.started, (long long)s.completed, (long long)s.failed, (long long)s.in_flight, (long long)s.backlog,
      (long long)s.done_interval, s.p50_ms, s.p99_ms, s.max_ms, (long long)s.deleted, (long long)s.server_errors,
      s.drain ? 1 : 0);
  return buf;
}

const char* kMdHeader =
    "| t | server RSS MiB | server fds | w1 RSS MiB | w1 fds | w2 RSS MiB | w2 fds | db MiB | WAL MiB | "
    "done | total | failed | in flight | waiting | p50 ms | p99 ms | deleted |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|";

std::string md_row(const Sample& s) {
  auto mib = [](int64_t kib) { return static_cast<double>(kib) / 1024.0; };
  char buf[512];
  const int t = static_cast<int>(s.t_s + 0.5);
  char when[32];
  std::snprintf(when, sizeof when, "%s%d:%02d", s.drain ? "end " : "", t / 60, t % 60);
  std::snprintf(buf, sizeof buf,
                "| %s | %.1f | %lld | %.1f | %lld | %.1f | %lld | %.2f | %.2f | %lld | %lld | %lld | %lld | %lld "
                "| %.1f | %.1f | %lld |",
                when, mib(s.server_rss), (long long)s.server_fds, mib(s.worker_rss[0]), (long long)s.worker_fds[0],
                mib(s.worker_rss[1]), (long long)s.worker_fds[1], mib(s.db_bytes / 1024), mib(s.wal_bytes / 1024),
                (long long)s.done_interval, (long long)s.completed, (long long)s.failed, (long long)s.in_flight,
                (long long)s.backlog, s.p50_ms, s.p99_ms, (long long)s.deleted);
  return buf;
}

// Reads what the server logged since the last call: runs retention deleted
// and error lines.
class LogFollower {
 public:
  explicit LogFollower(std::string path) : path_(std::move(path)) {}
  void update(int64_t& deleted, int64_t& errors) {
    std::ifstream in(path_);
    in.seekg(offset_);
    static const std::regex runs("retention deleted closed runs\" runs=\"?(\\d+)");
    for (std::string line; std::getline(in, line);) {
      if (in.eof()) break;  // a line still being written: read it next time
      offset_ += static_cast<std::streamoff>(line.size()) + 1;
      std::smatch m;
      if (std::regex_search(line, m, runs)) deleted_ += std::stoll(m[1].str());
      if (line.find("level=error") != std::string::npos) ++errors_;
    }
    deleted = deleted_;
    errors = errors_;
  }

 private:
  std::string path_;
  std::streamoff offset_ = 0;
  int64_t deleted_ = 0, errors_ = 0;
};

// A flag's number must be more than 0 (CLI11's PositiveNumber names the
// largest double in its message).
const CLI::Validator kPositive(
    [](std::string& text) {
      char* end = nullptr;
      const double value = std::strtod(text.c_str(), &end);
      return end != text.c_str() && *end == '\0' && value > 0 ? std::string()
                                                              : "'" + text + "' is not a number above 0";
    },
    "", "positive");

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "soak_driver: %s\n", message.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::string server_binary, examples_binary, out;
  double minutes = 60, rate = 10, sample_seconds = 60;
  int threads = 64;
  std::string retention = "3m", sweep = "15s";
  CLI::App app("A server, two workers and a steady mixed load, sampled as it runs", "soak_driver");
  command_line::set_up(app);
  app.add_option("--server", server_binary, "The reprise-server binary")->required()->type_name("PATH");
  app.add_option("--examples", examples_binary, "The reprise-examples binary (its workers)")
      ->required()
      ->type_name("PATH");
  app.add_option("--out", out, "Where the logs, soak.csv and the database go")->required()->type_name("DIR");
  app.add_option("--minutes", minutes, "How long to run")->check(kPositive);
  app.add_option("--rate", rate, "Workflows started per second")->check(kPositive);
  app.add_option("--sample-seconds", sample_seconds, "Seconds between samples")->check(kPositive);
  app.add_option("--threads", threads, "Client threads")->check(command_line::whole_number(1, 4096));
  app.add_option("--retention", retention, "The server's --retention")->type_name("DURATION");
  app.add_option("--retention-sweep-interval", sweep, "The server's --retention-sweep-interval")->type_name("DURATION");
  if (std::optional<int> exit_code = command_line::parse(app, argc, argv)) return *exit_code;
  setvbuf(stdout, nullptr, _IOLBF, 0);
  ::mkdir(out.c_str(), 0755);
  const std::string db = out + "/soak.db";
  for (const char* suffix : {"", "-wal", "-shm"}) ::unlink((db + suffix).c_str());
  for (const char* log : {"/server.log", "/worker1.log", "/worker2.log"}) ::unlink((out + log).c_str());

  // The server logs at info so the retention passes can be counted.
  Process server({server_binary, "--db", db, "--listen", "127.0.0.1:0", "--retention", retention,
                  "--retention-sweep-interval", sweep, "--log-level", "info"},
                 out + "/server.log");
  std::string line, address;
  std::smatch m;
  if (!server.read_line(line) || !std::regex_search(line, m, std::regex("listening on (\\S+)"))) {
    die("the server did not start; see " + out + "/server.log");
  }
  address = m[1].str();
  const std::string queue = "soak";
  std::vector<std::unique_ptr<Process>> workers;
  for (int w = 1; w <= 2; ++w) {
    workers.push_back(std::make_unique<Process>(
        std::vector<std::string>{examples_binary, "--address", address, "worker", "--task-queue", queue},
        out + "/worker" + std::to_string(w) + ".log"));
    if (!workers.back()->read_line(line) || line.rfind("worker ready", 0) != 0) {
      die("worker " + std::to_string(w) + " did not start; see " + out + "/worker" + std::to_string(w) + ".log");
    }
  }
  std::printf("soak: server %s (pid %d), workers pid %d and %d; %.0f min at %.1f workflows/s, retention %s\n",
              address.c_str(), server.pid(), workers[0]->pid(), workers[1]->pid(), minutes, rate, retention.c_str());

  auto connection = Connection::remote(address);
  Client client(connection);

  // Driver state: starts scheduled by the pacer and not yet taken by a
  // runner (waiting), runners' workflows not yet closed (in flight), and the
  // latencies of the current interval.
  std::mutex mu;
  std::condition_variable cv;
  std::deque<int64_t> waiting;
  bool pacing_done = false;
  std::atomic<bool> stop_pacing{false};  // a process died: start nothing more
  std::vector<double> latencies;
  int64_t started = 0, completed = 0, failed = 0, in_flight = 0;
  std::vector<std::string> failures;

  std::vector<std::thread> runners;
  for (int t = 0; t < threads; ++t) {
    runners.emplace_back([&] {
      for (;;) {
        int64_t seq;
        {
          std::unique_lock lock(mu);
          cv.wait(lock, [&] { return !waiting.empty() || pacing_done; });
          if (waiting.empty()) return;
          seq = waiting.front();
          waiting.pop_front();
          ++started;
          ++in_flight;
        }
        const Kind kind = kMix[seq % std::size(kMix)];
        const auto begin = Steady::now();
        const std::string problem = run_one(client, queue, kind, seq, 2min);
        const double ms = std::chrono::duration<double, std::milli>(Steady::now() - begin).count();
        std::lock_guard lock(mu);
        --in_flight;
        if (problem.empty()) {
          ++completed;
          latencies.push_back(ms);
        } else {
          ++failed;
          failures.push_back(std::string(kind_name(kind)) + " #" + std::to_string(seq) + ": " + problem);
          std::fprintf(stderr, "soak: FAILED %s\n", failures.back().c_str());
        }
      }
    });
  }

  const auto t0 = Steady::now();
  const auto end = t0 + std::chrono::duration_cast<Steady::duration>(std::chrono::duration<double>(minutes * 60));
  std::thread pacer([&] {
    for (int64_t seq = 0;; ++seq) {
      const auto at = t0 + std::chrono::duration_cast<Steady::duration>(std::chrono::duration<double>(seq / rate));
      if (at >= end || stop_pacing) break;
      std::this_thread::sleep_until(at);
      std::lock_guard lock(mu);
      waiting.push_back(seq);
      cv.notify_one();
    }
    std::lock_guard lock(mu);
    pacing_done = true;
    cv.notify_all();
  });

  LogFollower server_log(out + "/server.log");
  std::vector<Sample> samples;
  std::FILE* csv = std::fopen((out + "/soak.csv").c_str(), "w");
  if (csv == nullptr) die("cannot write " + out + "/soak.csv");
  std::fprintf(csv, "%s\n", kCsvHeader);
  std::printf("%s\n", kMdHeader);
  bool processes_alive = true;
  auto take_sample = [&](double t_s, bool drain) {
    Sample s;
    s.t_s = t_s;
    s.drain = drain;
    s.server_rss = rss_kib(server.pid());
    s.server_fds = open_fds(server.pid());
    for (int w = 0; w < 2; ++w) {
      s.worker_rss[w] = rss_kib(workers[w]->pid());
      s.worker_fds[w] = open_fds(workers[w]->pid());
    }
    s.db_bytes = file_size(db);
    s.wal_bytes = file_size(db + "-wal");
    std::vector<double> interval;
    {
      std::lock_guard lock(mu);
      interval.swap(latencies);
      s.started = started;
      s.completed = completed;
      s.failed = failed;
      s.in_flight = in_flight;
      s.backlog = static_cast<int64_t>(waiting.size());
    }
    s.done_interval = static_cast<int64_t>(interval.size());
    std::sort(interval.begin(), interval.end());
    if (!interval.empty()) {
      s.p50_ms = interval[interval.size() / 2];
      s.p99_ms = interval[std::min(interval.size() - 1, interval.size() * 99 / 100)];
      s.max_ms = interval.back();
    }
    server_log.update(s.deleted, s.server_errors);
    samples.push_back(s);
    std::fprintf(csv, "%s\n", csv_row(s).c_str());
    std::fflush(csv);
    std::printf("%s\n", md_row(s).c_str());
    const std::pair<const char*, Process*> processes[] = {
        {"server", &server}, {"worker1", workers[0].get()}, {"worker2", workers[1].get()}};
    for (const auto& [name, process] : processes) {
      if (processes_alive && !process->alive()) {
        processes_alive = false;
        std::fprintf(stderr, "soak: the %s (pid %d) exited; see %s/%s.log\n", name, process->pid(), out.c_str(), name);
      }
    }
  };

  take_sample(0, false);
  for (int64_t k = 1; processes_alive; ++k) {
    const double t = std::min(k * sample_seconds, minutes * 60);
    std::this_thread::sleep_until(t0 + std::chrono::duration_cast<Steady::duration>(std::chrono::duration<double>(t)));
    take_sample(t, false);
    if (t >= minutes * 60) break;
  }
  if (!processes_alive) {
    stop_pacing = true;
    std::lock_guard lock(mu);
    waiting.clear();
  }
  // The last starts finish (or are lost after their 2 min) before the summary.
  pacer.join();
  for (auto& r : runners) r.join();
  const double drained_s = std::chrono::duration<double>(Steady::now() - t0).count();
  take_sample(drained_s, true);
  std::fclose(csv);

  for (auto& w : workers) w->stop(30s);
  server.stop(30s);

  const Sample& last = samples.back();
  const bool ok = processes_alive && last.failed == 0 && last.completed == last.started && last.started > 0;
  std::ostringstream summary;
  summary << "workflows started " << last.started << ", completed as expected " << last.completed << ", failed or lost "
          << last.failed << "; runs deleted by retention " << last.deleted << "; server error log lines "
          << last.server_errors << "\n";
  // RSS and latency trend: the first loaded interval against the last full one.
  if (samples.size() >= 3) {
    const Sample& first = samples[1];
    const Sample& final_full = samples[samples.size() - 2];
    int64_t peak_db = 0;
    for (const Sample& s : samples) peak_db = std::max(peak_db, s.db_bytes + s.wal_bytes);
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "first loaded sample -> last full one: server RSS %.1f -> %.1f MiB, workers %.1f -> %.1f and "
                  "%.1f -> %.1f MiB; p99 %.1f -> %.1f ms; db+WAL %.2f -> %.2f MiB (peak %.2f)\n",
                  first.server_rss / 1024.0, final_full.server_rss / 1024.0, first.worker_rss[0] / 1024.0,
                  final_full.worker_rss[0] / 1024.0, first.worker_rss[1] / 1024.0, final_full.worker_rss[1] / 1024.0,
                  first.p99_ms, final_full.p99_ms, (first.db_bytes + first.wal_bytes) / 1048576.0,
                  (final_full.db_bytes + final_full.wal_bytes) / 1048576.0, peak_db / 1048576.0);
    summary << buf;
  }
  if (!processes_alive) summary << "a server or worker process exited during the soak\n";
  for (size_t i = 0; i < failures.size() && i < 20; ++i) summary << "  " << failures[i] << "\n";
  summary << (ok ? "soak passed" : "soak FAILED") << "\n";

  std::FILE* md = std::fopen((out + "/soak.md").c_str(), "w");
  if (md != nullptr) {
    std::fprintf(md,
                 "# Soak: %.0f min at %.1f workflows/s, retention %s (sweep every %s)\n\n"
                 "The last row is taken after the last workflows closed (%.0f s). `in flight` and `waiting` are the "
                 "driver's counts (started and not closed; due and not yet started): the server exposes no queue "
                 "depths.\n\n%s\n",
                 minutes, rate, retention.c_str(), sweep.c_str(), drained_s, kMdHeader);
    for (const Sample& s : samples) std::fprintf(md, "%s\n", md_row(s).c_str());
    std::fprintf(md, "\n```\n%s```\n", summary.str().c_str());
    std::fclose(md);
  }
  std::printf("\n%s", summary.str().c_str());
  return ok ? 0 : 1;
}
