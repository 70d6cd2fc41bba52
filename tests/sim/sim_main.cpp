// reprise-sim: runs seeds of the deterministic simulator (simulation.hpp).
//
//   reprise-sim --seed S          one seed; on failure its trace (replay it)
//   reprise-sim --seeds N         seeds 1..N (or --first F .. F+N-1)
//   reprise-sim --minutes M       seeds from --first on until M minutes pass
//   --replay-file F               the workload recorded in F (workload.hpp)
//                                 instead of the seed's; the seeds then
//                                 drive only the scheduling
//   --print-workload              print each seed's workload in that form
//                                 (to record a case) instead of running it
//   --determinism K               every Kth seed runs twice and must give the
//                                 same trace hash (default 5; 0 = never)
//   --verbose                     the engine's log on stderr
//   --trace                       every job and note of the run on stderr
//
// Exits 1 if any seed failed, and prints each failing seed with a short
// trace: `./run sim --seed S` replays it event for event.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>

#include "simulation.hpp"

namespace {

reprise::sim::SimResult run_seed(uint64_t seed, const std::optional<reprise::sim::Workload>& workload, bool verbose,
                                 bool trace) {
  const char* base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
  std::string dir = std::string(base) + "/reprise-sim-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    std::perror("mkdtemp");
    std::exit(2);
  }
  reprise::sim::SimOptions options;
  options.seed = seed;
  options.workload = workload;
  options.db_dir = dir;
  options.verbose = verbose;
  options.trace = trace;
  reprise::sim::SimResult result = reprise::sim::run_simulation(options);
  std::filesystem::remove_all(dir);
  return result;
}

void print_failure(uint64_t seed, const std::string& replay_file, const reprise::sim::SimResult& r) {
  const std::string file = replay_file.empty() ? "" : " --replay-file " + replay_file;
  std::printf("FAILED seed %llu (replay: ./run sim%s --seed %llu)\n", static_cast<unsigned long long>(seed),
              file.c_str(), static_cast<unsigned long long>(seed));
  for (const auto& f : r.failures) std::printf("  invariant: %s\n", f.c_str());
  std::printf("  last events:\n");
  for (const auto& line : r.trace) std::printf("    %s\n", line.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t first = 1;
  uint64_t seeds = 20;
  double minutes = 0;
  int determinism = 5;
  bool single = false, verbose = false, print_workload = false, trace = false;
  std::string replay_file;
  std::optional<reprise::sim::Workload> workload;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--seed") {
      first = std::stoull(value());
      seeds = 1;
      single = true;
    } else if (arg == "--seeds") {
      seeds = std::stoull(value());
    } else if (arg == "--first") {
      first = std::stoull(value());
    } else if (arg == "--minutes") {
      minutes = std::stod(value());
    } else if (arg == "--determinism") {
      determinism = std::stoi(value());
    } else if (arg == "--verbose") {
      verbose = true;
    } else if (arg == "--trace") {
      trace = true;
    } else if (arg == "--print-workload") {
      print_workload = true;
    } else if (arg == "--replay-file") {
      replay_file = value();
      std::ifstream in(replay_file);
      std::stringstream text;
      text << in.rdbuf();
      auto parsed = reprise::sim::parse_workload(text.str());
      if (!in || !parsed) {
        std::fprintf(stderr, "%s: %s\n", replay_file.c_str(),
                     in ? parsed.status().to_string().c_str() : "cannot be read");
        return 2;
      }
      workload = std::move(parsed).value();
    } else {
      std::fprintf(stderr, "unknown argument %s (see the comment at the top of tests/sim/sim_main.cpp)\n", arg.c_str());
      return 2;
    }
  }
  const auto began = std::chrono::steady_clock::now();
  auto elapsed_minutes = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count() / 60;
  };
  int failed = 0;
  uint64_t ran = 0, workflows = 0, engine_crashes = 0, worker_crashes = 0, queries = 0, steps = 0;
  uint64_t closed_queries = 0, eager = 0;
  double virtual_seconds = 0;
  std::map<std::string, uint64_t> kinds;
  if (print_workload) {
    for (uint64_t seed = first; seed < first + seeds; ++seed) {
      std::printf("# reprise-sim workload of seed %llu\n%s", static_cast<unsigned long long>(seed),
                  reprise::sim::to_text(workload ? *workload : reprise::sim::generate_workload(seed)).c_str());
    }
    return 0;
  }
  for (uint64_t seed = first;; ++seed) {
    if (minutes > 0 ? elapsed_minutes() >= minutes : seed >= first + seeds) break;
    reprise::sim::SimResult r = run_seed(seed, workload, verbose, trace);
    ++ran;
    workflows += r.workflows;
    engine_crashes += r.engine_crashes;
    worker_crashes += r.worker_crashes;
    queries += r.queries_answered;
    closed_queries += r.closed_queries_refused;
    eager += r.eager_activities;
    for (const auto& [kind, n] : r.kinds) kinds[kind] += n;
    steps += r.steps;
    virtual_seconds += r.virtual_seconds;
    if (determinism > 0 && (single || (seed - first) % determinism == 0)) {
      reprise::sim::SimResult again = run_seed(seed, workload, false, false);
      if (again.trace_hash != r.trace_hash || again.steps != r.steps) {
        r.ok = false;
        r.failures.push_back("not deterministic: the same seed ran " + std::to_string(r.steps) + " steps (hash " +
                             std::to_string(r.trace_hash) + ") then " + std::to_string(again.steps) + " (hash " +
                             std::to_string(again.trace_hash) + ")");
      }
    }
    if (!r.ok) {
      ++failed;
      print_failure(seed, replay_file, r);
    } else if (single) {
      std::printf("seed %llu passed: %d workflows, %d engine crashes, %d worker crashes, %.0f virtual s, %llu steps\n",
                  static_cast<unsigned long long>(seed), r.workflows, r.engine_crashes, r.worker_crashes,
                  r.virtual_seconds, static_cast<unsigned long long>(r.steps));
    }
    std::fflush(stdout);
  }
  std::printf(
      "%llu seeds, %d failed: %llu workflows, %.2f virtual hours, %llu engine crashes, %llu worker crashes, "
      "%llu queries answered, %llu queries of closed runs refused, %llu steps, %.1f minutes\n",
      static_cast<unsigned long long>(ran), failed, static_cast<unsigned long long>(workflows), virtual_seconds / 3600,
      static_cast<unsigned long long>(engine_crashes), static_cast<unsigned long long>(worker_crashes),
      static_cast<unsigned long long>(queries), static_cast<unsigned long long>(closed_queries),
      static_cast<unsigned long long>(steps), elapsed_minutes());
  std::string counts;
  for (const auto& [kind, n] : kinds) counts += " " + kind + " " + std::to_string(n);
  std::printf("generated:%s; eager activities run: %llu\n", counts.c_str(), static_cast<unsigned long long>(eager));
  return failed == 0 ? 0 : 1;
}
