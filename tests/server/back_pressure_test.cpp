// Back-pressure against the real server: a burst of signals to one
// workflow, beyond --max-waiting-per-execution and --max-pending-requests,
// is partly refused as RESOURCE_EXHAUSTED carrying the retryable trailer,
// and every signal the server acknowledged is in the history once.
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

}  // namespace
}  // namespace reprise
