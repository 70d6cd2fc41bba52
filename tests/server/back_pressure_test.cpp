// Back-pressure against the real server: a burst of signals to one
// workflow, beyond --max-waiting-per-execution and --max-pending-requests,
// is partly refused as RESOURCE_EXHAUSTED carrying the retryable trailer,
// and every signal the server acknowledged is in the history once. Queries
// waiting on a workflow no worker serves have a bound of their own and a
// clamped wait: they refuse neither a worker's completion nor a start.
#include <chrono>
#include <latch>
#include <thread>

#include "history/status.hpp"
#include "server_harness.hpp"

namespace reprise {
namespace {

TEST(BackPressure, ABurstBeyondTheLimitsIsRefusedAsRetryableAndWhatWasAcknowledgedIsRecordedOnce) {
  TempDir dir;
  Server server(dir.file("burst.db"), {"--max-waiting-per-execution", "1", "--max-pending-requests", "4"});
  v1::StartWorkflowResponse started;
  ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("burst"), &started).ok());

  constexpr int kSenders = 64;
  std::latch go(kSenders);
  std::atomic<int> acknowledged{0}, refused_retryable{0}, other{0};
  std::vector<std::thread> senders;
  for (int i = 0; i < kSenders; ++i) {
    senders.emplace_back([&, i] {
      v1::SignalWorkflowRequest r;
      r.mutable_workflow_execution()->set_workflow_id("burst");
      r.set_signal_name("note");
      r.set_request_id("note-" + std::to_string(i));
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
      v1::SignalWorkflowResponse out;
      go.arrive_and_wait();
      const grpc::Status s = server.stub().SignalWorkflow(&context, r, &out);
      if (s.ok()) {
        ++acknowledged;
      } else if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
                 context.GetServerTrailingMetadata().count(kRetryableTrailer) == 1) {
        ++refused_retryable;
      } else {
        ++other;
        ADD_FAILURE() << s.error_code() << " " << s.error_message();
      }
    });
  }
  for (auto& t : senders) t.join();
  EXPECT_EQ(other, 0);
  EXPECT_GT(refused_retryable, 0) << "64 at once into a queue of 1 behind a limit of 4: some are refused";
  EXPECT_GT(acknowledged, 0);
  EXPECT_EQ(count_events(history_of(server.stub(), "burst"), v1::EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED),
            acknowledged.load())
      << "each acknowledged signal once, no refused one";
}

// A query of workflow `id` with the given client timeout (the request's own)
// and gRPC deadline.
grpc::Status query(Stub& stub, const std::string& id, std::chrono::milliseconds timeout,
                   std::chrono::milliseconds deadline) {
  v1::QueryWorkflowRequest r;
  r.mutable_workflow_execution()->set_workflow_id(id);
  r.set_query_type("state");
  r.mutable_timeout()->set_seconds(timeout.count() / 1000);
  r.mutable_timeout()->set_nanos(static_cast<int32_t>(timeout.count() % 1000) * 1'000'000);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  v1::QueryWorkflowResponse out;
  return stub.QueryWorkflow(&context, r, &out);
}

TEST(BackPressure, QueriesWaitingOnAnUnservedWorkflowRefuseNeitherACompletionNorAStart) {
  using namespace std::chrono_literals;
  TempDir dir;
  // Fewer request slots than waiting queries: before queries had a door of
  // their own, these queries took every slot for their whole wait.
  constexpr int kWaiting = 6;
  Server server(dir.file("queries.db"), {"--max-pending-requests", "4", "--max-pending-queries",
                                         std::to_string(kWaiting), "--max-query-wait-ms", "3000"});
  v1::StartWorkflowRequest unserved = start_request("unserved");
  unserved.mutable_task_queue()->set_name("nobody-polls-this");
  v1::StartWorkflowResponse started;
  ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, unserved, &started).ok());
  ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("served"), &started).ok());
  const v1::PollWorkflowTaskResponse task = next_workflow_task(server.stub());
  ASSERT_FALSE(task.task_token().empty());

  // Each asks for 60 s, far past the server's 3 s clamp.
  std::vector<grpc::Status> outcomes(kWaiting);
  std::vector<std::chrono::milliseconds> took(kWaiting);
  std::vector<std::thread> waiting;
  for (int i = 0; i < kWaiting; ++i) {
    waiting.emplace_back([&, i] {
      // Again while a probe below holds a slot for its 100 ms, as the SDK would.
      const auto give_up = std::chrono::steady_clock::now() + 5s;
      do {
        const auto t0 = std::chrono::steady_clock::now();
        outcomes[i] = query(server.stub(), "unserved", 60s, 20s);
        took[i] = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
      } while (outcomes[i].error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
               std::chrono::steady_clock::now() < give_up);
    });
  }
  // Until the waiting queries are in: one more is refused at the door.
  grpc::Status probe;
  const auto give_up = std::chrono::steady_clock::now() + 2500ms;
  do {
    probe = query(server.stub(), "unserved", 100ms, 5s);
  } while (probe.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED && std::chrono::steady_clock::now() < give_up);
  ASSERT_EQ(probe.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << probe.error_message();

  // With the queries waiting: a worker completes another workflow, a client
  // starts and signals one. None may be refused.
  const grpc::Status completed = complete(server.stub(), task.task_token(), {finish("done")});
  EXPECT_TRUE(completed.ok()) << completed.error_code() << " " << completed.error_message();
  const grpc::Status start = call(server.stub(), &Stub::StartWorkflow, start_request("later"), &started);
  EXPECT_TRUE(start.ok()) << start.error_code() << " " << start.error_message();
  const grpc::Status signal = poke(server.stub(), "later");
  EXPECT_TRUE(signal.ok()) << signal.error_code() << " " << signal.error_message();
  // The query beyond the bound was refused for the queries' own limit.
  EXPECT_NE(probe.error_message().find("--max-pending-queries"), std::string::npos) << probe.error_message();

  for (auto& t : waiting) t.join();
  for (int i = 0; i < kWaiting; ++i) {
    EXPECT_EQ(outcomes[i].error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << outcomes[i].error_message();
    EXPECT_NE(outcomes[i].error_message().find("--max-query-wait-ms"), std::string::npos)
        << outcomes[i].error_message();
    // Ended at the clamp (3 s), not the 60 s asked for nor the 20 s deadline.
    EXPECT_GE(took[i], 2900ms);
    EXPECT_LT(took[i], 10s);
  }
  // Their slots are back: a query is admitted again (and waits its own 100 ms).
  EXPECT_EQ(query(server.stub(), "unserved", 100ms, 5s).error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
}

}  // namespace
}  // namespace reprise
