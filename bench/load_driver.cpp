// load_driver: end-to-end load on reprise-server over loopback gRPC, with a
// fake worker in this process that answers every task at once.
//
// Each workflow is "start, one activity, complete" (7 state transitions:
// start, workflow task started/completed, activity started/completed,
// workflow task started/completed). For each concurrency level, that many
// client threads loop "start a workflow, wait for its close event"; the
// driver reports workflows/s, transitions/s and start-to-close latency
// percentiles. Levels are interleaved across rounds so machine noise spreads
// evenly; the summary gives the median and min–max over rounds.
//
//   load_driver --server PATH/reprise-server [--seconds 5] [--rounds 3]
//               [--levels 1,8,64] [--durability full|normal]
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <regex>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "reprise/v1/service.grpc.pb.h"
#include "storage_stats_report.hpp"
#include "store_test_util.hpp"
#include "tools/command_line/command_line.hpp"

using namespace reprise;
using Stub = v1::WorkflowService::Stub;
using Steady = std::chrono::steady_clock;

namespace {

constexpr int kTransitionsPerWorkflow = 7;

struct Options {
  std::string server;
  int seconds = 5;
  int rounds = 3;
  std::vector<int> levels = {1, 8, 64};
  std::string durability = "full";
};

std::unique_ptr<grpc::ClientContext> context(int seconds) {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  return c;
}

// Answers tasks until `stop`: workflow tasks schedule the activity, then
// complete; activity tasks complete at once.
void workflow_poller(Stub& stub, const std::string& queue, std::atomic<bool>& stop) {
  while (!stop) {
    v1::PollWorkflowTaskRequest poll;
    poll.mutable_task_queue()->set_name(queue);
    v1::PollWorkflowTaskResponse task;
    if (!stub.PollWorkflowTask(context(5).get(), poll, &task).ok() || task.task_token().empty()) continue;
    const auto& events = task.history().events();
    const bool activity_done = events.size() >= 3 && events[events.size() - 3].has_activity_task_completed();
    v1::CompleteWorkflowTaskRequest done;
    done.set_task_token(task.task_token());
    v1::Command* c = done.add_commands();
    if (activity_done) {
      c->set_command_type(v1::COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION);
      *c->mutable_complete_workflow_execution()->mutable_result() =
          events[events.size() - 3].activity_task_completed().result();
    } else {
      c->set_command_type(v1::COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK);
      auto* a = c->mutable_schedule_activity_task();
      a->set_activity_id("1");
      a->mutable_activity_type()->set_name("greet");
      a->mutable_start_to_close_timeout()->set_seconds(30);
      *a->mutable_input() = events[0].workflow_execution_started().input();
    }
    v1::CompleteWorkflowTaskResponse ignored;
    stub.CompleteWorkflowTask(context(10).get(), done, &ignored);
  }
}

void activity_poller(Stub& stub, const std::string& queue, std::atomic<bool>& stop) {
  while (!stop) {
    v1::PollActivityTaskRequest poll;
    poll.mutable_task_queue()->set_name(queue);
    v1::PollActivityTaskResponse task;
    if (!stub.PollActivityTask(context(5).get(), poll, &task).ok() || task.task_token().empty()) continue;
    v1::CompleteActivityRequest done;
    done.set_task_token(task.task_token());
    done.mutable_result()->add_payloads()->set_data("Hello, " + task.input().payloads(0).data());
    v1::CompleteActivityResponse ignored;
    stub.CompleteActivity(context(10).get(), done, &ignored);
  }
}

struct LevelResult {
  double workflows_per_second = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  int failures = 0;
  std::string storage;  // bench::per_workflow for the level
};

LevelResult run_level(Stub& stub, int concurrency, int seconds, int round) {
  const std::string queue = "load-" + std::to_string(concurrency) + "-" + std::to_string(round);
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  const int pollers = std::min(concurrency, 16);
  for (int i = 0; i < pollers; ++i) {
    workers.emplace_back([&] { workflow_poller(stub, queue, stop); });
    workers.emplace_back([&] { activity_poller(stub, queue, stop); });
  }
  std::mutex mu;
  std::vector<double> latencies_ms;
  std::atomic<int> failures{0};
  std::atomic<bool> clients_stop{false};
  std::vector<std::thread> clients;
  const v1::GetStorageStatsResponse stats_before = bench::storage_stats(stub);
  const auto began = Steady::now();
  for (int c = 0; c < concurrency; ++c) {
    clients.emplace_back([&, c] {
      for (int n = 0; !clients_stop; ++n) {
        const std::string id = queue + "-c" + std::to_string(c) + "-" + std::to_string(n);
        const auto t0 = Steady::now();
        v1::StartWorkflowRequest start;
        start.set_workflow_id(id);
        start.mutable_workflow_type()->set_name("hello");
        start.mutable_task_queue()->set_name(queue);
        start.mutable_input()->add_payloads()->set_data("world");
        start.set_request_id(id);
        v1::StartWorkflowResponse started;
        if (!stub.StartWorkflow(context(10).get(), start, &started).ok()) {
          ++failures;
          continue;
        }
        v1::GetHistoryRequest wait;
        wait.mutable_workflow_execution()->set_workflow_id(id);
        wait.mutable_workflow_execution()->set_run_id(started.run_id());
        wait.set_wait_new_event(true);
        wait.set_close_event_only(true);
        wait.mutable_wait_timeout()->set_seconds(30);
        v1::GetHistoryResponse closed;
        if (!stub.GetHistory(context(35).get(), wait, &closed).ok() || closed.history().events_size() != 1 ||
            !closed.history().events(0).has_workflow_execution_completed()) {
          ++failures;
          continue;
        }
        const double ms = std::chrono::duration<double, std::milli>(Steady::now() - t0).count();
        std::lock_guard lock(mu);
        latencies_ms.push_back(ms);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  clients_stop = true;
  for (auto& t : clients) t.join();
  const double elapsed = std::chrono::duration<double>(Steady::now() - began).count();
  const v1::GetStorageStatsResponse stats_after = bench::storage_stats(stub);
  stop = true;
  for (auto& t : workers) t.join();

  LevelResult r;
  std::sort(latencies_ms.begin(), latencies_ms.end());
  r.workflows_per_second = static_cast<double>(latencies_ms.size()) / elapsed;
  if (!latencies_ms.empty()) {
    r.p50_ms = latencies_ms[latencies_ms.size() / 2];
    r.p99_ms = latencies_ms[std::min(latencies_ms.size() - 1, latencies_ms.size() * 99 / 100)];
  }
  r.failures = failures;
  r.storage = bench::per_workflow(stats_before, stats_after, static_cast<int64_t>(latencies_ms.size()));
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("Raw gRPC clients and workers against a reprise-server: workflows per second and latency per level",
               "load_driver");
  command_line::set_up(app);
  app.add_option("--server", o.server, "The reprise-server binary")->required()->type_name("PATH");
  app.add_option("--seconds", o.seconds, "Seconds per level and round")->check(command_line::whole_number(1));
  app.add_option("--rounds", o.rounds, "Rounds (median and range over them)")->check(command_line::whole_number(1));
  app.add_option("--levels", o.levels, "Workflows in flight, comma-separated")
      ->delimiter(',')
      ->check(command_line::whole_number(1, 100000));
  app.add_option("--durability", o.durability, "The server's --durability")->check(CLI::IsMember({"full", "normal"}));
  if (std::optional<int> exit_code = command_line::parse(app, argc, argv)) return *exit_code;
  engine::testing::TempDir dir;
  engine::testing::ChildProcess server({o.server, "--db", dir.file("load.db"), "--listen", "127.0.0.1:0",
                                        "--durability", o.durability, "--log-level", "warn"});
  std::string line;
  std::smatch m;
  if (!server.read_line(line) || !std::regex_search(line, m, std::regex("listening on (\\S+)"))) {
    std::fprintf(stderr, "load_driver: the server did not start: %s\n", line.c_str());
    return 1;
  }
  auto channel = grpc::CreateChannel(m[1].str(), grpc::InsecureChannelCredentials());
  auto stub = v1::WorkflowService::NewStub(channel);
  std::printf("reprise-server at %s, durability %s, %d s per level, %d rounds (levels interleaved)\n",
              m[1].str().c_str(), o.durability.c_str(), o.seconds, o.rounds);

  std::map<int, std::vector<LevelResult>> results;
  for (int round = 0; round < o.rounds; ++round) {
    for (int level : o.levels) {
      LevelResult r = run_level(*stub, level, o.seconds, round);
      std::printf("  round %d, %2d concurrent: %7.1f workflows/s  p50 %6.2f ms  p99 %6.2f ms  failures %d\n", round + 1,
                  level, r.workflows_per_second, r.p50_ms, r.p99_ms, r.failures);
      std::printf("    %s\n", r.storage.c_str());
      std::fflush(stdout);
      results[level].push_back(r);
    }
  }
  std::printf("\nsummary (median over rounds, [min-max]):\n");
  std::printf("  concurrent  workflows/s             transitions/s  p50 ms  p99 ms\n");
  for (int level : o.levels) {
    std::vector<double> wps, p50, p99;
    for (const auto& r : results[level]) {
      wps.push_back(r.workflows_per_second);
      p50.push_back(r.p50_ms);
      p99.push_back(r.p99_ms);
    }
    const auto [lo, hi] = std::minmax_element(wps.begin(), wps.end());
    std::printf("  %10d  %7.1f [%6.1f-%6.1f]  %13.0f  %6.2f  %6.2f\n", level, median(wps), *lo, *hi,
                median(wps) * kTransitionsPerWorkflow, median(p50), median(p99));
  }
  server.kill(SIGTERM);
  server.wait();
  return 0;
}
