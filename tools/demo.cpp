// reprise-demo: the main job of `./run demo`. Starts reprise-server on a
// SQLite file and a worker built with the C++ SDK, runs the examples
// (examples/README.md) and checks their outcomes, then three more typed
// workflows — an activity, an activity that fails twice and is retried, a
// durable timer — kills the server with SIGKILL while the timer is pending,
// restarts it on the same file and address, and shows that the workflow
// carries on and the worker reconnects by itself.
//
//   reprise-demo --server PATH/reprise-server [--db PATH]
#include <cstdio>
#include <filesystem>
#include <optional>
#include <thread>

#include "child_process.hpp"
#include "examples/examples.hpp"
#include "history/event_builder.hpp"
#include "reprise/client.hpp"
#include "reprise/worker.hpp"
#include "tools/command_line/command_line.hpp"

using namespace reprise;
using namespace std::chrono_literals;

namespace {

// --- activities: plain functions, run on the worker's activity pool ---

std::string charge(ActivityContext& ctx, std::string order) {
  if (ctx.info().attempt < 3) {
    std::printf("[worker] %s: activity 'charge' attempt %d fails: card network timeout\n",
                ctx.info().workflow_id.c_str(), ctx.info().attempt);
    throw std::runtime_error("card network timeout");  // retryable: the engine retries with backoff
  }
  std::printf("[worker] %s: activity 'charge' attempt %d succeeds\n", ctx.info().workflow_id.c_str(),
              ctx.info().attempt);
  return "charged " + order + " on attempt " + std::to_string(ctx.info().attempt);
}
inline constexpr Activity<&charge> charge_activity{"charge"};

// --- workflows: coroutines, replayed from history on every task ---

Workflow<std::string> payment(WorkflowContext& ctx, std::string order) {
  auto options = ActivityOptions::start_to_close(10s).retry_initial_interval(200ms).maximum_attempts(5);
  co_return co_await ctx.execute(charge_activity, options, order);
}
inline constexpr WorkflowDef<&payment> payment_wf{"payment"};

Workflow<std::string> reminder(WorkflowContext& ctx, std::string what) {
  if (!ctx.replaying()) std::printf("[worker] reminder-1: sleeping 3 s on a durable timer\n");
  co_await ctx.sleep(3s);
  co_return "reminded about the " + what;
}
inline constexpr WorkflowDef<&reminder> reminder_wf{"reminder"};

// --- the server process ---

std::unique_ptr<engine::testing::ChildProcess> start_server(const std::string& binary, const std::string& db,
                                                            std::string& address) {
  auto process = std::make_unique<engine::testing::ChildProcess>(
      std::vector<std::string>{binary, "--db", db, "--listen", address.empty() ? "127.0.0.1:0" : address,
                               "--poll-timeout-ms", "1000", "--log-level", "warn"});
  std::string line;
  // "reprise-server listening on HOST:PORT ...": the word after the label.
  const std::string label = "listening on ";
  const size_t at = process->read_line(line) ? line.find(label) : std::string::npos;
  if (at == std::string::npos) {
    std::fprintf(stderr, "reprise-demo: the server did not start\n");
    std::exit(1);
  }
  std::printf("[server] %s\n", line.c_str());
  const size_t address_at = at + label.size();
  address = line.substr(address_at, line.find(' ', address_at) - address_at);
  return process;
}

template <typename T>
bool finished(WorkflowHandle<T>& run) {
  try {
    std::printf("[client] %s: \"%s\"\n", run.workflow_id().c_str(), run.result().c_str());
    return true;
  } catch (const Error& e) {
    std::printf("[client] %s: FAILED: %s\n", run.workflow_id().c_str(), e.what());
    return false;
  }
}

void print_history(Connection& connection, const std::string& id) {
  v1::GetHistoryRequest r;
  r.mutable_workflow_execution()->set_workflow_id(id);
  const v1::GetHistoryResponse out = connection.get_history(r, 5s);
  std::printf("\n%s:\n", id.c_str());
  for (const auto& e : out.history().events()) {
    std::string detail;
    if (e.has_activity_task_scheduled()) detail = e.activity_task_scheduled().activity_type().name();
    if (e.has_activity_task_started()) detail = "attempt " + std::to_string(e.activity_task_started().attempt());
    if (e.has_timer_started()) detail = std::to_string(e.timer_started().start_to_fire_timeout().seconds()) + " s";
    if (e.has_workflow_execution_completed()) {
      detail = from_payload<std::string>(e.workflow_execution_completed().result().payloads(0), "result");
    }
    std::printf("  %2lld %-28s %s\n", static_cast<long long>(e.event_id()),
                history::event_type_name(e.event_type()).c_str(), detail.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string binary, db = "reprise-demo.db";
  CLI::App app("The demo of `./run demo`: a server, a worker, the examples, a crash and a restart.", "reprise-demo");
  reprise::command_line::set_up(app);
  app.add_option("--server", binary, "The reprise-server binary to run")->required()->type_name("PATH");
  app.add_option("--db", db, "The SQLite file (removed first)")->type_name("PATH")->capture_default_str();
  if (std::optional<int> exit_code = reprise::command_line::parse(app, argc, argv)) return *exit_code;
  setvbuf(stdout, nullptr, _IOLBF, 0);
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db + suffix);

  std::string address;
  auto server = start_server(binary, db, address);
  auto connection = Connection::remote(address);
  Worker worker(connection, {.task_queue = "demo", .workflow_threads = 2, .activity_threads = 2});
  examples::register_all(worker);
  worker.register_workflow(payment_wf);
  worker.register_workflow(reminder_wf);
  worker.register_activity(charge_activity);
  worker.start();

  Client client(connection);
  std::printf("\n[demo] the examples (examples/README.md), each checked:\n");
  const bool examples_ok = examples::run_all(client, "demo", "example-", stdout);
  std::printf("\n[demo] retries, a durable timer and a server crash:\n");
  auto hello_run = client.start(examples::hello_wf, {.id = "hello-1", .task_queue = "demo"}, std::string("world"));
  auto payment_run = client.start(payment_wf, {.id = "payment-1", .task_queue = "demo"}, std::string("order-42"));
  auto reminder_run = client.start(reminder_wf, {.id = "reminder-1", .task_queue = "demo"}, std::string("dentist"));
  std::printf("[client] started hello-1, payment-1, reminder-1\n");
  const bool hello_ok = finished(hello_run);
  const bool payment_ok = finished(payment_run);
  std::this_thread::sleep_for(500ms);  // reminder-1 is now waiting on its timer

  std::printf("[demo] kill -9 the server while reminder-1's timer is pending\n");
  server->kill(SIGKILL);
  server->wait();
  server = start_server(binary, db, address);
  std::printf("[demo] restarted on the same file and address; the worker reconnects by itself\n");
  const bool reminder_ok = finished(reminder_run);
  worker.stop();

  for (const char* id : {"hello-1", "payment-1", "reminder-1"}) print_history(*connection, id);
  server->kill(SIGTERM);
  server->wait();
  std::printf("\n[demo] done: %s; 3 more workflows through one server crash, nothing lost (db %s)\n",
              examples_ok ? "every example ended as it should" : "SOME EXAMPLES FAILED", db.c_str());
  return examples_ok && hello_ok && payment_ok && reminder_ok ? 0 : 1;
}
