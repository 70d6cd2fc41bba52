// reprise-server killed with SIGKILL at random moments while workers, a
// signaler and a starter keep it busy, then restarted on the same file, five
// times over. Afterwards every acknowledged start has completed, every
// acknowledged signal is in its workflow's history exactly once, and every
// history is whole (ids 1..n, each activity and the child's result once).
#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "server_harness.hpp"
#include "tests/test_seed.hpp"

namespace reprise {
namespace {

constexpr int kInitialOrders = 24;
constexpr int kLateOrders = 8;  // started while the server is being killed
constexpr int kKills = 8;

std::string order_id(int i) { return "order-" + std::to_string(i); }

std::unique_ptr<Stub> connect(const std::string& address) {
  grpc::ChannelArguments args;
  // Reconnect quickly after each restart instead of backing off for seconds.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 200);
  return v1::WorkflowService::NewStub(grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
}

v1::StartWorkflowRequest order_request(int i) {
  v1::StartWorkflowRequest r = start_request(order_id(i));
  r.mutable_workflow_type()->set_name("order");
  r.mutable_workflow_task_timeout()->set_seconds(1);  // a task lost in a crash comes back quickly
  return r;
}

int count(const v1::History& h, v1::EventType type) {
  int n = 0;
  for (const auto& e : h.events()) n += e.event_type() == type ? 1 : 0;
  return n;
}

// The workers' decision for one workflow task, from its full history: an
// order starts its shipping child, runs kCharges activities one after the
// other, and completes once it has also heard kNotes signals.
constexpr int kCharges = 3;
constexpr int kNotes = 2;
std::vector<v1::Command> decide(const v1::PollWorkflowTaskResponse& task) {
  const v1::History& h = task.history();
  if (task.workflow_type().name() == "shipping") return {finish("shipped")};
  std::vector<v1::Command> commands;
  if (count(h, v1::EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED) == 0) {
    v1::Command ship;
    ship.set_command_type(v1::COMMAND_TYPE_START_CHILD_WORKFLOW_EXECUTION);
    auto* a = ship.mutable_start_child_workflow_execution();
    a->set_workflow_id("ship-" + task.workflow_execution().workflow_id());
    a->mutable_workflow_type()->set_name("shipping");
    a->mutable_task_queue()->set_name("q");
    a->mutable_workflow_task_timeout()->set_seconds(1);
    commands.push_back(ship);
  }
  const int scheduled = count(h, v1::EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
  const int charged = count(h, v1::EVENT_TYPE_ACTIVITY_TASK_COMPLETED);
  if (scheduled == charged && charged < kCharges) {
    v1::Command charge = schedule("charge-" + std::to_string(charged + 1));
    charge.mutable_schedule_activity_task()->mutable_start_to_close_timeout()->set_seconds(2);
    commands.push_back(charge);
  }
  if (charged == kCharges && count(h, v1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED) == 1 &&
      count(h, v1::EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED) >= kNotes) {
    commands.push_back(finish("done"));
  }
  return commands;
}

// Polls and answers until told to stop; every error (the server is down)
// is just a reason to try again.
void workflow_worker(const std::string& address, const std::atomic<bool>& stop) {
  auto stub = connect(address);
  while (!stop) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    v1::PollWorkflowTaskRequest r;
    r.mutable_task_queue()->set_name("q");
    v1::PollWorkflowTaskResponse task;
    if (!stub->PollWorkflowTask(&context, r, &task).ok()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    if (!task.task_token().empty()) (void)complete(*stub, task.task_token(), decide(task));
  }
}

void activity_worker(const std::string& address, const std::atomic<bool>& stop) {
  auto stub = connect(address);
  while (!stop) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    v1::PollActivityTaskRequest r;
    r.mutable_task_queue()->set_name("q");
    v1::PollActivityTaskResponse task;
    if (!stub->PollActivityTask(&context, r, &task).ok()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    if (task.task_token().empty()) continue;
    v1::CompleteActivityRequest done;
    done.set_task_token(task.task_token());
    done.mutable_result()->add_payloads()->set_data("charged");
    v1::CompleteActivityResponse ignored;
    (void)call(*stub, &Stub::CompleteActivity, done, &ignored);
  }
}

TEST(RestartUnderLoad, NothingAcknowledgedIsLostAcrossRandomKills) {
  TempDir dir;
  const std::string db = dir.file("chaos.db");
  auto server = std::make_unique<Server>(db);
  const std::string address = server->address();
  for (int i = 0; i < kInitialOrders; ++i) {
    v1::StartWorkflowResponse out;
    ASSERT_TRUE(call(server->stub(), &Stub::StartWorkflow, order_request(i), &out).ok());
  }

  std::atomic<bool> stop{false};
  std::mutex acked_mu;
  std::map<std::string, std::set<std::string>> acked_signals;  // workflow id -> signal inputs
  std::set<int> acked_late_starts;
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) threads.emplace_back(workflow_worker, address, std::cref(stop));
  threads.emplace_back(activity_worker, address, std::cref(stop));
  threads.emplace_back([&] {  // signals to random orders; only acknowledged ones count
    auto stub = connect(address);
    std::mt19937 random(7);
    for (int n = 0; !stop; ++n) {
      v1::SignalWorkflowRequest s;
      const std::string id = order_id(static_cast<int>(random() % (kInitialOrders + kLateOrders)));
      s.mutable_workflow_execution()->set_workflow_id(id);
      s.set_signal_name("note");
      const std::string input = "note-" + std::to_string(n);
      s.mutable_input()->add_payloads()->set_data(input);
      v1::SignalWorkflowResponse ignored;
      if (call(*stub, &Stub::SignalWorkflow, s, &ignored).ok()) {
        std::lock_guard lock(acked_mu);
        acked_signals[id].insert(input);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(15));
    }
  });
  threads.emplace_back([&] {  // starts during the chaos, each retried until acknowledged
    auto stub = connect(address);
    for (int i = kInitialOrders; i < kInitialOrders + kLateOrders && !stop; ++i) {
      v1::StartWorkflowResponse out;
      while (!stop && !call(*stub, &Stub::StartWorkflow, order_request(i), &out).ok()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      if (!stop) {
        std::lock_guard lock(acked_mu);
        acked_late_starts.insert(i);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });

  // The kill times; the run's timing is not replayable, but the kills are.
  const uint64_t seed = test_seed("REPRISE_RESTART_SEED");
  SCOPED_TRACE("seed " + std::to_string(seed) + " (REPRISE_RESTART_SEED replays the kill times)");
  std::mt19937_64 random(seed);
  for (int kill = 0; kill < kKills; ++kill) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + random() % 500));
    server->kill9();
    server = std::make_unique<Server>(db, std::vector<std::string>{"--listen", address});
    ASSERT_EQ(server->address(), address);
  }

  // Let everything acknowledged finish.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  std::vector<int> orders;
  for (int i = 0; i < kInitialOrders; ++i) orders.push_back(i);
  auto all_closed = [&] {
    std::lock_guard lock(acked_mu);
    std::vector<int> wanted = orders;
    wanted.insert(wanted.end(), acked_late_starts.begin(), acked_late_starts.end());
    for (int i : wanted) {
      v1::DescribeWorkflowRequest d;
      d.mutable_workflow_execution()->set_workflow_id(order_id(i));
      v1::DescribeWorkflowResponse out;
      if (!call(server->stub(), &Stub::DescribeWorkflow, d, &out).ok() ||
          out.info().status() == v1::WORKFLOW_EXECUTION_STATUS_RUNNING) {
        return false;
      }
    }
    return true;
  };
  while (!all_closed() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  stop = true;
  for (auto& t : threads) t.join();

  std::lock_guard lock(acked_mu);
  for (int i : acked_late_starts) orders.push_back(i);
  EXPECT_GE(acked_late_starts.size(), 1u);
  size_t signals_checked = 0;
  for (int i : orders) {
    const std::string id = order_id(i);
    v1::GetHistoryRequest h;
    h.mutable_workflow_execution()->set_workflow_id(id);
    h.set_maximum_page_size(100000);
    v1::GetHistoryResponse history;
    ASSERT_TRUE(call(server->stub(), &Stub::GetHistory, h, &history).ok()) << id;
    const auto& events = history.history().events();
    ASSERT_GT(events.size(), 0) << id;
    std::map<v1::EventType, int> seen;
    std::map<std::string, int> signals;
    for (int j = 0; j < events.size(); ++j) {
      EXPECT_EQ(events[j].event_id(), j + 1) << id << ": no event lost or doubled";
      ++seen[events[j].event_type()];
      if (events[j].has_workflow_execution_signaled()) {
        ++signals[events[j].workflow_execution_signaled().input().payloads(0).data()];
      }
    }
    EXPECT_EQ(events[events.size() - 1].event_type(), v1::EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED) << id;
    EXPECT_EQ(seen[v1::EVENT_TYPE_ACTIVITY_TASK_COMPLETED], kCharges) << id;
    EXPECT_EQ(seen[v1::EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED], 1) << id;
    for (const std::string& input : acked_signals[id]) {
      EXPECT_EQ(signals[input], 1) << id << ": acknowledged signal " << input;
      ++signals_checked;
    }
  }
  EXPECT_GT(signals_checked, 0u);
  std::printf("[chaos] %d kills, %zu workflows, %zu acknowledged signals checked\n", kKills, orders.size(),
              signals_checked);
}

}  // namespace
}  // namespace reprise
