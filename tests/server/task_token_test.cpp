// Task tokens are signed (engine/execution/task_token_codec.hpp): a worker
// cannot build one from the ids GetHistory shows, nor alter one it was given,
// and the ones it holds stay good across a restart and one key rotation.
#include <gtest/gtest.h>

#include "reprise/internal/state.pb.h"
#include "tests/server/server_harness.hpp"

namespace reprise {
namespace {

grpc::Status complete_activity(Stub& stub, const std::string& token) {
  v1::CompleteActivityRequest r;
  r.set_task_token(token);
  r.mutable_result()->add_payloads()->set_data("done");
  v1::CompleteActivityResponse ignored;
  return call(stub, &Stub::CompleteActivity, r, &ignored);
}

// Two activities of workflow `id` started, and their tokens.
std::pair<std::string, std::string> start_two_activities(Stub& stub, const std::string& id) {
  v1::StartWorkflowResponse started;
  EXPECT_TRUE(call(stub, &Stub::StartWorkflow, start_request(id), &started).ok());
  auto task = next_workflow_task(stub);
  EXPECT_TRUE(complete(stub, task.task_token(), {schedule("1"), schedule("2")}).ok());
  return {next_activity_task(stub).task_token(), next_activity_task(stub).task_token()};
}

TEST(SignedTaskTokens, ATokenBuiltFromTheHistoryOrAlteredIsRefused) {
  TempDir dir;
  Server server(dir.file("tokens.db"));
  const auto [token, other] = start_two_activities(server.stub(), "victim");
  ASSERT_FALSE(token.empty());

  // What a hostile worker can learn: the run id and the scheduled event.
  const auto history = history_of(server.stub(), "victim");
  internal::TaskToken forged;
  forged.set_namespace_("default");
  forged.set_workflow_id("victim");
  forged.set_activity(true);
  forged.set_attempt(1);
  forged.set_run_id(describe(server.stub(), "victim").info().execution().run_id());
  for (const auto& e : history.history().events()) {
    if (e.has_activity_task_scheduled() && forged.scheduled_event_id() == 0)
      forged.set_scheduled_event_id(e.event_id());
  }
  ASSERT_FALSE(forged.run_id().empty());
  ASSERT_GT(forged.scheduled_event_id(), 0);
  grpc::Status s = complete_activity(server.stub(), forged.SerializeAsString());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_NE(s.error_message().find("task_token"), std::string::npos) << s.error_message();

  std::string altered = token;
  altered[altered.size() / 2] ^= 1;  // inside the signed token proto
  s = complete_activity(server.stub(), altered);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_NE(s.error_message().find("signature"), std::string::npos) << s.error_message();

  EXPECT_EQ(count_events(history_of(server.stub(), "victim"), v1::EVENT_TYPE_ACTIVITY_TASK_COMPLETED), 0)
      << "a refused token changed nothing";
  s = complete_activity(server.stub(), token);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(count_events(history_of(server.stub(), "victim"), v1::EVENT_TYPE_ACTIVITY_TASK_COMPLETED), 1);
}

TEST(SignedTaskTokens, TokensOutliveARestartAndOneKeyRotationButNotTwo) {
  TempDir dir;
  const std::string db = dir.file("rotate.db");
  std::string first, second, third;
  {
    // Starts committed before the hand-out, so the tokens name started
    // attempts after the crash (a start held in memory would be lost).
    Server server(db, {"--max-held-start", "0"});
    std::tie(first, second) = start_two_activities(server.stub(), "wf");
    auto [a, b] = start_two_activities(server.stub(), "wf2");
    third = a;
    server.kill9();
  }
  {
    Server server(db);  // the keys are the database's, not the process's
    grpc::Status s = complete_activity(server.stub(), first);
    EXPECT_TRUE(s.ok()) << s.error_message();
    server.kill9();
  }
  {
    Server server(db, {"--rotate-task-token-key"});
    grpc::Status s = complete_activity(server.stub(), second);
    EXPECT_TRUE(s.ok()) << "a token of the key before the rotation still verifies: " << s.error_message();
    server.kill9();
  }
  {
    Server server(db, {"--rotate-task-token-key"});
    grpc::Status s = complete_activity(server.stub(), third);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_NE(s.error_message().find("no longer has"), std::string::npos) << s.error_message();
  }
}

}  // namespace
}  // namespace reprise
