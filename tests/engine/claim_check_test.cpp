// Claim-check inside the engine: what a transition references is recorded
// with it, so blob garbage collection keeps exactly the blobs some execution
// still needs (in history, in a buffered event, in heartbeat details).
#include "engine/claim_check.hpp"

#include "engine_fixture.hpp"
#include "history/payload.hpp"

namespace reprise::engine {
namespace {

class ClaimCheckTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    restart([](EngineOptions& o) { o.claim_check.threshold = 1024; });
  }

  // Blobs removed by a collection with no grace period.
  int64_t collected() {
    clock_.advance(1s);  // past the (zero) grace period of everything stored so far
    auto gc = store_->blobs().collect_garbage(std::chrono::nanoseconds(0));
    EXPECT_TRUE(gc.is_ok()) << gc.status().to_string();
    return gc.is_ok() ? gc->blobs_deleted : -1;
  }
  bool stored(const v1::Payload& reference) {
    history::Sha256Digest digest{};
    return history::digest_from_bytes(reference.external().sha256(), digest) &&
           store_->blobs().stat(digest, "default").is_ok();
  }
};

TEST_F(ClaimCheckTest, ReferencedBlobsSurviveCollectionAndOrphansDoNot) {
  v1::StartWorkflowRequest r;
  r.set_workflow_id("claims-1");
  r.mutable_workflow_type()->set_name("hello");
  r.mutable_task_queue()->set_name("greetings");
  r.mutable_input()->add_payloads()->set_data(std::string(4096, 'i'));
  ASSERT_TRUE(call(&Engine::start_workflow, r).is_ok());

  auto task = poll_workflow();
  const auto& input = task.history().events(0).workflow_execution_started().input().payloads(0);
  ASSERT_TRUE(history::is_claim_check(input));

  // A signal that arrives while the task runs waits in the state, not history.
  v1::SignalWorkflowRequest signal;
  signal.mutable_workflow_execution()->set_workflow_id("claims-1");
  signal.set_signal_name("bulk");
  signal.mutable_input()->add_payloads()->set_data(std::string(4096, 's'));
  ASSERT_TRUE(call(&Engine::signal_workflow, signal).is_ok());

  ASSERT_TRUE(store_->blobs().put(std::string(4096, 'o'), "default").is_ok());  // uploaded, never used
  EXPECT_EQ(collected(), 1) << "only the orphan: the input and the buffered signal are referenced";
  EXPECT_TRUE(stored(input));

  ASSERT_TRUE(complete(task.task_token(), {}).is_ok());
  auto next = poll_workflow();
  const v1::Payload* signaled = nullptr;
  for (const auto& e : next.history().events()) {
    if (e.has_workflow_execution_signaled()) signaled = &e.workflow_execution_signaled().input().payloads(0);
  }
  ASSERT_NE(signaled, nullptr);
  EXPECT_TRUE(history::is_claim_check(*signaled)) << "the signal reached history as a reference";
  EXPECT_EQ(collected(), 0);
  EXPECT_TRUE(stored(*signaled));
}

// Heartbeat details live in the run's state, not its history: a large one
// is moved to the blob store, and its reference keeps the blob alive.
TEST_F(ClaimCheckTest, HeartbeatDetailsKeepTheirBlobAlive) {
  ASSERT_TRUE(start("claims-hb").is_ok());
  ASSERT_TRUE(complete(poll_workflow().task_token(), {schedule_greet()}).is_ok());
  auto activity = poll_activity();
  ASSERT_FALSE(activity.task_token().empty());
  v1::HeartbeatActivityRequest beat;
  beat.set_task_token(activity.task_token());
  beat.mutable_details()->add_payloads()->set_data(std::string(4096, 'h'));
  ASSERT_TRUE(call(&Engine::heartbeat_activity, beat).is_ok());

  v1::DescribeWorkflowRequest d;
  d.mutable_workflow_execution()->set_workflow_id("claims-hb");
  auto described = call(&Engine::describe_workflow, d);
  ASSERT_TRUE(described.is_ok()) << described.status().to_string();
  ASSERT_EQ(described->pending_activities_size(), 1);
  ASSERT_EQ(described->pending_activities(0).heartbeat_details().payloads_size(), 1);
  const v1::Payload details = described->pending_activities(0).heartbeat_details().payloads(0);
  ASSERT_TRUE(history::is_claim_check(details)) << "moved to the blob store";

  ASSERT_TRUE(store_->blobs().put(std::string(4096, 'o'), "default").is_ok());  // uploaded, never used
  EXPECT_EQ(collected(), 1) << "only the orphan: the heartbeat's details are referenced";
  EXPECT_TRUE(stored(details));
}

TEST_F(ClaimCheckTest, SmallRequestsHoldNoReferences) {
  ClaimCheck check(store_->blobs(), {.threshold = 1024, .blob_limit = 1 << 20});
  v1::SignalWorkflowRequest small;
  small.mutable_input()->add_payloads()->set_data("tiny");
  auto refs = check.offload(small, "default");
  ASSERT_TRUE(refs.is_ok());
  EXPECT_FALSE(*refs);
  EXPECT_EQ(small.input().payloads(0).data(), "tiny");
}

// The default threshold (--claim-check-threshold-bytes): a payload of
// 128 KiB or more leaves for the blob store, one byte less stays inline.
TEST_F(ClaimCheckTest, PayloadsOf128KiBOrMoreAreMovedAndSmallerOnesStay) {
  ClaimCheck check(store_->blobs(), ClaimCheckOptions{});
  v1::SignalWorkflowRequest below;
  below.mutable_input()->add_payloads()->set_data(std::string(128 * 1024 - 1, 'b'));
  auto kept = check.offload(below, "default");
  ASSERT_TRUE(kept.is_ok()) << kept.status().to_string();
  EXPECT_FALSE(*kept);
  EXPECT_FALSE(history::is_claim_check(below.input().payloads(0)));

  v1::SignalWorkflowRequest at;
  at.mutable_input()->add_payloads()->set_data(std::string(128 * 1024, 'a'));
  auto moved = check.offload(at, "default");
  ASSERT_TRUE(moved.is_ok()) << moved.status().to_string();
  EXPECT_TRUE(*moved);
  ASSERT_TRUE(history::is_claim_check(at.input().payloads(0)));
  EXPECT_EQ(at.input().payloads(0).external().size(), 128 * 1024);
}

TEST_F(ClaimCheckTest, PayloadsDeepInsideCommandsAreFound) {
  ClaimCheck check(store_->blobs(), {.threshold = 1024, .blob_limit = 1 << 20});
  v1::CompleteWorkflowTaskRequest r;
  auto* fail = r.add_commands()->mutable_fail_workflow_execution();
  fail->mutable_failure()->mutable_cause()->mutable_details()->add_payloads()->set_data(std::string(2048, 'd'));
  (*r.add_commands()->mutable_record_marker()->mutable_details())["k"].add_payloads()->set_data(std::string(2048, 'm'));
  auto refs = check.offload(r, "default");
  ASSERT_TRUE(refs.is_ok()) << refs.status().to_string();
  EXPECT_TRUE(*refs);
  EXPECT_TRUE(history::is_claim_check(r.commands(0).fail_workflow_execution().failure().cause().details().payloads(0)))
      << "a failure's cause's details";
  EXPECT_TRUE(history::is_claim_check(r.commands(1).record_marker().details().at("k").payloads(0))) << "a map value";
  std::vector<history::Sha256Digest> digests;
  ASSERT_TRUE(collect_claim_checks(r, digests).is_ok());
  EXPECT_EQ(digests.size(), 2u);
}

}  // namespace
}  // namespace reprise::engine
