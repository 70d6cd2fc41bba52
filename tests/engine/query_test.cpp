// Queries through the engine: routed to a worker as in-memory query tasks,
// answered through their token, timed out when nobody answers.
#include "engine/execution/task_token_codec.hpp"
#include "engine_fixture.hpp"

namespace reprise::engine {
namespace {

using QueryTest = EngineTest;

v1::QueryWorkflowRequest query(const std::string& workflow_id, const std::string& type, int timeout_ms = 5000) {
  v1::QueryWorkflowRequest q;
  q.mutable_workflow_execution()->set_workflow_id(workflow_id);
  q.set_query_type(type);
  q.mutable_args()->add_payloads()->set_data("arg");
  q.mutable_timeout()->set_nanos(0);
  q.mutable_timeout()->set_seconds(timeout_ms / 1000);
  q.mutable_timeout()->set_nanos((timeout_ms % 1000) * 1'000'000);
  return q;
}

TEST_F(QueryTest, AWorkerAnswersAQueryFromTheWorkflowsHistory) {
  ASSERT_TRUE(start("cart-1").is_ok());
  ASSERT_TRUE(complete(poll_workflow().task_token(), {}).is_ok());  // the workflow waits

  std::promise<Result<v1::QueryWorkflowResponse>> answered;
  engine_->query_workflow(query("cart-1", "item_count"),
                          [&](Result<v1::QueryWorkflowResponse> r) { answered.set_value(std::move(r)); });

  auto task = poll_workflow();
  ASSERT_FALSE(task.task_token().empty());
  ASSERT_EQ(task.queries_size(), 1);
  const auto& [key, q] = *task.queries().begin();
  EXPECT_EQ(q.query_type(), "item_count");
  EXPECT_EQ(q.args().payloads(0).data(), "arg");
  EXPECT_EQ(task.history().events_size(), 4) << "the full history, to replay";

  v1::CompleteWorkflowTaskRequest answer;
  answer.set_task_token(task.task_token());
  (*answer.mutable_query_results())[key].mutable_answer()->add_payloads()->set_data("3");
  ASSERT_TRUE(call(&Engine::complete_workflow_task, answer).is_ok());
  auto r = answered.get_future().get();
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->result().payloads(0).data(), "3");

  v1::DescribeWorkflowRequest describe;
  describe.mutable_workflow_execution()->set_workflow_id("cart-1");
  EXPECT_EQ(call(&Engine::describe_workflow, describe)->info().history_length(), 4) << "a query writes nothing";
}

TEST_F(QueryTest, AQueryNobodyAnswersTimesOutNamingTheQueue) {
  ASSERT_TRUE(start("cart-2").is_ok());
  ASSERT_TRUE(complete(poll_workflow().task_token(), {}).is_ok());
  auto r = call(&Engine::query_workflow, query("cart-2", "item_count", 200));
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(r.status().message().find("task queue 'greetings'"), std::string::npos) << r.status().to_string();
  EXPECT_TRUE(poll_workflow().task_token().empty()) << "the expired query task left the queue";
}

TEST_F(QueryTest, HandlerErrorsAndWorkerFailuresReachTheClient) {
  ASSERT_TRUE(start("cart-3").is_ok());
  ASSERT_TRUE(complete(poll_workflow().task_token(), {}).is_ok());

  std::promise<Result<v1::QueryWorkflowResponse>> first;
  engine_->query_workflow(query("cart-3", "nonexistent"),
                          [&](Result<v1::QueryWorkflowResponse> r) { first.set_value(std::move(r)); });
  auto task = poll_workflow();
  v1::CompleteWorkflowTaskRequest answer;
  answer.set_task_token(task.task_token());
  (*answer.mutable_query_results())[task.queries().begin()->first].set_error_message("unknown query 'nonexistent'");
  ASSERT_TRUE(call(&Engine::complete_workflow_task, answer).is_ok());
  auto r = first.get_future().get();
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "query 'nonexistent' failed: unknown query 'nonexistent'");

  std::promise<Result<v1::QueryWorkflowResponse>> second;
  engine_->query_workflow(query("cart-3", "item_count"),
                          [&](Result<v1::QueryWorkflowResponse> r) { second.set_value(std::move(r)); });
  v1::FailWorkflowTaskRequest failed;
  failed.set_task_token(poll_workflow().task_token());
  failed.mutable_failure()->set_message("replay diverged");
  ASSERT_TRUE(call(&Engine::fail_workflow_task, failed).is_ok());
  r = second.get_future().get();
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("replay diverged"), std::string::npos);
}

// A query task's token names the workflow asked: an answer whose token names
// another one (here re-signed with the server's key, as only a forger with
// the key could) reaches nobody, and the query it was taken from still waits
// for its own answer.
TEST_F(QueryTest, AnAnswerWhoseTokenNamesAnotherWorkflowIsNotFoundAndTheQueryStillWaits) {
  ASSERT_TRUE(start("cart-5").is_ok());
  ASSERT_TRUE(complete(poll_workflow().task_token(), {}).is_ok());
  auto other = start("cart-6");
  ASSERT_TRUE(other.is_ok());
  ASSERT_TRUE(complete(poll_workflow().task_token(), {}).is_ok());

  std::promise<Result<v1::QueryWorkflowResponse>> answered;
  engine_->query_workflow(query("cart-5", "item_count"),
                          [&](Result<v1::QueryWorkflowResponse> r) { answered.set_value(std::move(r)); });
  auto task = poll_workflow();
  ASSERT_EQ(task.workflow_execution().workflow_id(), "cart-5");
  ASSERT_EQ(task.queries_size(), 1);
  const std::string key = task.queries().begin()->first;

  const TaskTokenCodec codec(store_->task_token_keys());
  auto token = codec.decode(task.task_token());
  ASSERT_TRUE(token.is_ok()) << token.status().to_string();
  ASSERT_NE(token->query_id(), 0);
  token->set_workflow_id("cart-6");
  token->set_run_id(other->run_id());
  v1::CompleteWorkflowTaskRequest forged;
  forged.set_task_token(codec.encode(*token));
  (*forged.mutable_query_results())[key].mutable_answer()->add_payloads()->set_data("forged");
  auto refused = call(&Engine::complete_workflow_task, forged);
  EXPECT_EQ(refused.status().code(), StatusCode::kNotFound) << refused.status().to_string();
  EXPECT_NE(refused.status().message().find("names another workflow"), std::string::npos)
      << refused.status().to_string();

  v1::CompleteWorkflowTaskRequest genuine;
  genuine.set_task_token(task.task_token());
  (*genuine.mutable_query_results())[key].mutable_answer()->add_payloads()->set_data("3");
  ASSERT_TRUE(call(&Engine::complete_workflow_task, genuine).is_ok()) << "the query still waited for its answer";
  auto r = answered.get_future().get();
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->result().payloads(0).data(), "3");
}

TEST_F(QueryTest, QueriesToUnknownWorkflowsFailAtOnce) {
  auto r = call(&Engine::query_workflow, query("nobody", "x"));
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  v1::QueryWorkflowRequest no_type = query("nobody", "");
  EXPECT_EQ(call(&Engine::query_workflow, no_type).status().message(), "query_type is required");
}

TEST_F(QueryTest, ShutdownAnswersWaitingQueries) {
  ASSERT_TRUE(start("cart-4").is_ok());
  std::promise<Result<v1::QueryWorkflowResponse>> waiting;
  engine_->query_workflow(query("cart-4", "item_count"),
                          [&](Result<v1::QueryWorkflowResponse> r) { waiting.set_value(std::move(r)); });
  engine_->shutdown();
  EXPECT_EQ(waiting.get_future().get().status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace reprise::engine
