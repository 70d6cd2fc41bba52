// What the Client sends with each call, against a real reprise-server: a
// fresh request id per start and per signal (so a workflow id can be started
// again, and only retries are deduplicated), started() when a retry found
// its run, and the reuse policy.
#include <latch>
#include <thread>

#include "../server/server_harness.hpp"
#include "reprise/client.hpp"
#include "reprise/worker.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

inline constexpr Signal<std::string> note{"note"};

Workflow<std::string> echo(WorkflowContext&, std::string text) { co_return text; }
inline constexpr WorkflowDef<&echo> echo_wf{"echo"};

// Returns the first two notes it is sent, joined.
Workflow<std::string> two_notes(WorkflowContext& ctx) {
  std::string first = co_await ctx.wait(note);
  std::string second = co_await ctx.wait(note);
  co_return first + "+" + second;
}
inline constexpr WorkflowDef<&two_notes> two_notes_wf{"two_notes"};

struct Fixture {
  TempDir dir;
  Server server{dir.file("requests.db")};
  std::shared_ptr<Connection> connection = Connection::remote(server.address());
  Client client{connection};
  Worker worker{connection, {.task_queue = "requests", .workflow_threads = 1, .activity_threads = 1}};

  Fixture() {
    worker.register_workflow(echo_wf);
    worker.register_workflow(two_notes_wf);
    worker.start();
  }
  ~Fixture() { worker.stop(); }
};

TEST(ClientRequests, AWorkflowIdIsStartedAgainAfterItsRunClosed) {
  Fixture f;
  EXPECT_EQ(f.client.execute(echo_wf, {.id = "order-7", .task_queue = "requests"}, std::string("first")), "first");
  auto again = f.client.start(echo_wf, {.id = "order-7", .task_queue = "requests"}, std::string("second"));
  EXPECT_TRUE(again.started());
  EXPECT_EQ(again.result(30s), "second") << "a new run, not the closed one";

  auto waiting = f.client.start(two_notes_wf, {.id = "order-8", .task_queue = "requests"});
  waiting.terminate("operator");
  auto restarted = f.client.start(two_notes_wf, {.id = "order-8", .task_queue = "requests"});
  EXPECT_TRUE(restarted.started());
  EXPECT_NE(restarted.run_id(), waiting.run_id());
  restarted.terminate("done");
}

TEST(ClientRequests, AStartRetriedWithItsRequestIdFindsTheFirstRun) {
  Fixture f;
  const StartOptions options{.id = "retried", .task_queue = "requests", .request_id = "call-1"};
  auto first = f.client.start(two_notes_wf, options);
  auto retry = f.client.start(two_notes_wf, options);
  EXPECT_TRUE(first.started());
  EXPECT_FALSE(retry.started()) << "the server said started = false, and the handle tells";
  EXPECT_EQ(retry.run_id(), first.run_id());
  first.terminate("done");
}

TEST(ClientRequests, CallsTheServerRefusesAsBusyAreSentAgainUntilTheyGoThrough) {
  TempDir dir;
  Server server(dir.file("busy.db"), {"--max-waiting-per-execution", "1", "--max-pending-requests", "4"});
  Client client(Connection::remote(server.address()));
  auto run = client.start(two_notes_wf, {.id = "crowded", .task_queue = "nobody-polls"});
  constexpr int kSenders = 64;
  std::latch go(kSenders);
  std::atomic<int> failed{0};
  std::vector<std::thread> senders;
  for (int i = 0; i < kSenders; ++i) {
    senders.emplace_back([&, i] {
      go.arrive_and_wait();
      try {
        client.signal("crowded", note, "n" + std::to_string(i));
      } catch (const RpcError& e) {
        ++failed;
        ADD_FAILURE() << e.what();
      }
    });
  }
  for (auto& t : senders) t.join();
  EXPECT_EQ(failed, 0) << "RESOURCE_EXHAUSTED from back-pressure is retried, not thrown";
  v1::GetHistoryResponse history = history_of(server.stub(), "crowded");
  EXPECT_EQ(count_events(history, v1::EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED), kSenders) << "each signal once";
  run.terminate("done");
}

TEST(ClientRequests, TheReusePolicyIsSentWithTheStart) {
  Fixture f;
  EXPECT_EQ(f.client.execute(echo_wf, {.id = "once", .task_queue = "requests"}, std::string("x")), "x");
  try {
    f.client.start(
        echo_wf,
        {.id = "once", .task_queue = "requests", .id_reuse_policy = v1::WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE},
        std::string("y"));
    FAIL() << "REJECT_DUPLICATE refuses a second run";
  } catch (const RpcError& e) {
    EXPECT_EQ(e.code(), static_cast<int>(grpc::StatusCode::ALREADY_EXISTS)) << e.what();
  }
}

TEST(ClientRequests, EachSignalCallHasItsOwnRequestIdSoEqualSignalsAreBothDelivered) {
  Fixture f;
  auto run = f.client.start(two_notes_wf, {.id = "notes", .task_queue = "requests"});
  f.client.signal("notes", note, std::string("same"));
  f.client.signal("notes", note, std::string("same"));
  EXPECT_EQ(run.result(30s), "same+same");
  std::vector<std::string> request_ids;
  const v1::History history = fetch_history(*f.connection, "notes", run.run_id());
  for (const auto& e : history.events()) {
    if (e.has_workflow_execution_signaled()) request_ids.push_back(e.workflow_execution_signaled().request_id());
  }
  ASSERT_EQ(request_ids.size(), 2u);
  EXPECT_FALSE(request_ids[0].empty());
  EXPECT_NE(request_ids[0], request_ids[1]);
}

}  // namespace
}  // namespace reprise
