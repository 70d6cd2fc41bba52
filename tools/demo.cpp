// reprise-demo: the main job of `./run demo`. Starts reprise-server on a
// SQLite file, runs a worker (on the raw gRPC API, until the C++ SDK lands)
// and three workflows — an activity, an activity that fails twice and is
// retried, a durable timer — kills the server with SIGKILL while the timer is
// pending, restarts it, and shows that the workflow carries on.
//
//   reprise-demo --server PATH/reprise-server [--db PATH]
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <thread>

#include "child_process.hpp"
#include "history/event_builder.hpp"
#include "reprise/v1/service.grpc.pb.h"

using namespace reprise;
using Stub = v1::WorkflowService::Stub;

namespace {

std::unique_ptr<grpc::ClientContext> context(int seconds) {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  return c;
}

struct Server {
  std::unique_ptr<engine::testing::ChildProcess> process;
  std::unique_ptr<Stub> stub;
};

Server start_server(const std::string& binary, const std::string& db) {
  Server s;
  s.process = std::make_unique<engine::testing::ChildProcess>(std::vector<std::string>{
      binary, "--db", db, "--listen", "127.0.0.1:0", "--poll-timeout-ms", "1000", "--log-level", "warn"});
  std::string line;
  std::smatch m;
  if (!s.process->read_line(line) || !std::regex_search(line, m, std::regex("listening on (\\S+)"))) {
    std::fprintf(stderr, "reprise-demo: the server did not start\n");
    std::exit(1);
  }
  std::printf("[server] %s\n", line.c_str());
  s.stub = v1::WorkflowService::NewStub(grpc::CreateChannel(m[1].str(), grpc::InsecureChannelCredentials()));
  return s;
}

v1::Command command_schedule(const std::string& type, const v1::Payloads& input, int max_attempts) {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK);
  auto* a = c.mutable_schedule_activity_task();
  a->set_activity_id("1");
  a->mutable_activity_type()->set_name(type);
  a->mutable_start_to_close_timeout()->set_seconds(10);
  a->mutable_retry_policy()->mutable_initial_interval()->set_nanos(200'000'000);
  a->mutable_retry_policy()->set_maximum_attempts(max_attempts);
  *a->mutable_input() = input;
  return c;
}

// The workflow code, as a worker without the SDK would write it: look at the
// history, decide the next commands.
std::vector<v1::Command> decide(const v1::PollWorkflowTaskResponse& task, std::string& said) {
  const auto& events = task.history().events();
  const auto& input = events[0].workflow_execution_started().input();
  const std::string type = task.workflow_type().name();
  const auto& last = events[events.size() - 3];  // before this task's scheduled/started
  v1::Command c;
  if (last.has_activity_task_completed() || last.has_timer_fired()) {
    c.set_command_type(v1::COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION);
    if (last.has_activity_task_completed()) {
      *c.mutable_complete_workflow_execution()->mutable_result() = last.activity_task_completed().result();
    } else {
      c.mutable_complete_workflow_execution()->mutable_result()->add_payloads()->set_data("reminder sent");
    }
    said = "complete the workflow";
    return {c};
  }
  if (type == "reminder") {
    c.set_command_type(v1::COMMAND_TYPE_START_TIMER);
    c.mutable_start_timer()->set_timer_id("remind");
    c.mutable_start_timer()->mutable_start_to_fire_timeout()->set_seconds(3);
    said = "start a durable 3 s timer";
    return {c};
  }
  said = "schedule activity '" + std::string(type == "hello" ? "greet" : "charge") + "'";
  return {command_schedule(type == "hello" ? "greet" : "charge", input, 5)};
}

void run_worker(Stub& stub, std::atomic<bool>& stop) {
  std::thread activities([&] {
    while (!stop) {
      v1::PollActivityTaskRequest poll;
      poll.mutable_task_queue()->set_name("demo");
      v1::PollActivityTaskResponse task;
      if (!stub.PollActivityTask(context(5).get(), poll, &task).ok() || task.task_token().empty()) continue;
      const std::string who = task.input().payloads_size() > 0 ? task.input().payloads(0).data() : "";
      if (task.activity_type().name() == "charge" && task.attempt() < 3) {
        std::printf("[worker] %s: activity 'charge' attempt %d fails: card network timeout\n",
                    task.workflow_execution().workflow_id().c_str(), task.attempt());
        v1::FailActivityRequest fail;
        fail.set_task_token(task.task_token());
        fail.mutable_failure()->set_message("card network timeout");
        v1::FailActivityResponse ignored;
        stub.FailActivity(context(5).get(), fail, &ignored);
        continue;
      }
      const std::string result =
          task.activity_type().name() == "greet" ? "Hello, " + who + "!" : "charged " + who + " on attempt 3";
      std::printf("[worker] %s: activity '%s' attempt %d returns \"%s\"\n",
                  task.workflow_execution().workflow_id().c_str(), task.activity_type().name().c_str(), task.attempt(),
                  result.c_str());
      v1::CompleteActivityRequest done;
      done.set_task_token(task.task_token());
      done.mutable_result()->add_payloads()->set_data(result);
      v1::CompleteActivityResponse ignored;
      stub.CompleteActivity(context(5).get(), done, &ignored);
    }
  });
  while (!stop) {
    v1::PollWorkflowTaskRequest poll;
    poll.mutable_task_queue()->set_name("demo");
    v1::PollWorkflowTaskResponse task;
    if (!stub.PollWorkflowTask(context(5).get(), poll, &task).ok() || task.task_token().empty()) continue;
    std::string said;
    v1::CompleteWorkflowTaskRequest done;
    done.set_task_token(task.task_token());
    for (auto& c : decide(task, said)) *done.add_commands() = c;
    std::printf("[worker] %s: workflow task (history of %d events) -> %s\n",
                task.workflow_execution().workflow_id().c_str(), task.history().events_size(), said.c_str());
    v1::CompleteWorkflowTaskResponse ignored;
    stub.CompleteWorkflowTask(context(5).get(), done, &ignored);
  }
  activities.join();
}

void start(Stub& stub, const std::string& id, const std::string& type, const std::string& input) {
  v1::StartWorkflowRequest r;
  r.set_workflow_id(id);
  r.mutable_workflow_type()->set_name(type);
  r.mutable_task_queue()->set_name("demo");
  r.mutable_input()->add_payloads()->set_data(input);
  r.set_request_id(id);
  v1::StartWorkflowResponse out;
  grpc::Status s = stub.StartWorkflow(context(5).get(), r, &out);
  std::printf("[client] start %s (%s): %s\n", id.c_str(), type.c_str(),
              s.ok() ? ("run " + out.run_id()).c_str() : s.error_message().c_str());
}

bool wait_closed(Stub& stub, const std::string& id, int seconds) {
  v1::GetHistoryRequest r;
  r.mutable_workflow_execution()->set_workflow_id(id);
  r.set_wait_new_event(true);
  r.set_close_event_only(true);
  r.mutable_wait_timeout()->set_seconds(seconds);
  v1::GetHistoryResponse out;
  return stub.GetHistory(context(seconds + 5).get(), r, &out).ok() && out.history().events_size() == 1;
}

void print_history(Stub& stub, const std::string& id) {
  v1::GetHistoryRequest r;
  r.mutable_workflow_execution()->set_workflow_id(id);
  v1::GetHistoryResponse out;
  if (!stub.GetHistory(context(5).get(), r, &out).ok()) return;
  std::printf("\n%s:\n", id.c_str());
  for (const auto& e : out.history().events()) {
    std::string detail;
    if (e.has_activity_task_started()) detail = "attempt " + std::to_string(e.activity_task_started().attempt());
    if (e.has_activity_task_completed()) detail = e.activity_task_completed().result().payloads(0).data();
    if (e.has_timer_started()) detail = e.timer_started().timer_id();
    if (e.has_workflow_execution_completed()) detail = e.workflow_execution_completed().result().payloads(0).data();
    std::printf("  %2lld %-28s %s\n", static_cast<long long>(e.event_id()),
                history::event_type_name(e.event_type()).c_str(), detail.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string binary, db = "reprise-demo.db";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--server") binary = argv[i + 1];
    if (std::string(argv[i]) == "--db") db = argv[i + 1];
  }
  if (binary.empty()) {
    std::fprintf(stderr, "usage: reprise-demo --server PATH/reprise-server [--db PATH]\n");
    return 2;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);

  Server server = start_server(binary, db);
  std::atomic<bool> stop{false};
  std::thread worker([&] { run_worker(*server.stub, stop); });
  start(*server.stub, "hello-1", "hello", "world");
  start(*server.stub, "payment-1", "payment", "order-42");
  start(*server.stub, "reminder-1", "reminder", "dentist");
  const bool hello = wait_closed(*server.stub, "hello-1", 20);
  const bool payment = wait_closed(*server.stub, "payment-1", 20);
  std::printf("[client] hello-1 %s, payment-1 %s; reminder-1 waits on its timer\n", hello ? "completed" : "FAILED",
              payment ? "completed" : "FAILED");
  stop = true;
  worker.join();

  std::printf("[demo] kill -9 the server while reminder-1's timer is pending\n");
  server.process->kill(SIGKILL);
  server.process->wait();
  Server again = start_server(binary, db);
  std::printf("[demo] restarted on the same file; the worker reconnects\n");
  std::atomic<bool> stop_again{false};
  std::thread worker_again([&] { run_worker(*again.stub, stop_again); });
  const bool reminder = wait_closed(*again.stub, "reminder-1", 20);
  std::printf("[client] reminder-1 %s after the restart\n", reminder ? "completed" : "FAILED");
  stop_again = true;
  worker_again.join();

  for (const char* id : {"hello-1", "payment-1", "reminder-1"}) print_history(*again.stub, id);
  again.process->kill(SIGTERM);
  again.process->wait();
  std::printf("\n[demo] done: 3 workflows, one server crash, nothing lost (db %s)\n", db.c_str());
  return hello && payment && reminder ? 0 : 1;
}
