// reprise-server --metrics-listen: a real server over loopback runs a few
// workflows (one completes after an activity and a timer, one fails, one is
// terminated), then /metrics is scraped over HTTP and its values checked;
// and clients that send garbage or never finish their request wedge neither
// the metrics listener nor the gRPC port.
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "../store/http_exchange.hpp"
#include "server_harness.hpp"

namespace reprise {
namespace {

using testing_http::connect_to_loopback;
using testing_http::http_exchange;
using testing_http::scrape_metrics;

// The value of one series ("name{labels}" exactly as written), or -1.
double value_of(const std::string& page, const std::string& series) {
  const size_t at = page.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::strtod(page.c_str() + at + series.size() + 2, nullptr);
}

v1::StartWorkflowRequest typed_start(const std::string& id, const std::string& type) {
  v1::StartWorkflowRequest r = start_request(id);
  r.mutable_workflow_type()->set_name(type);
  return r;
}

v1::Command start_timer(const std::string& id) {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_START_TIMER);
  c.mutable_start_timer()->set_timer_id(id);
  c.mutable_start_timer()->mutable_start_to_fire_timeout()->set_nanos(50'000'000);
  return c;
}

v1::Command fail_workflow() {
  v1::Command c;
  c.set_command_type(v1::COMMAND_TYPE_FAIL_WORKFLOW_EXECUTION);
  c.mutable_fail_workflow_execution()->mutable_failure()->set_message("no");
  return c;
}

TEST(ServerMetrics, CountsWorkflowsRequestsAndCommitsOfARealServer) {
  TempDir dir;
  Server server(dir.file("metrics.db"), {"--metrics-listen", "127.0.0.1:0"});
  ASSERT_FALSE(server.metrics_address().empty()) << "no 'metrics on' in the listening line";
  Stub& stub = server.stub();
  v1::StartWorkflowResponse started;

  // One fails at its first task.
  ASSERT_TRUE(call(stub, &Stub::StartWorkflow, typed_start("f", "fails"), &started).ok());
  ASSERT_TRUE(complete(stub, next_workflow_task(stub).task_token(), {fail_workflow()}).ok());

  // One is terminated before any worker sees it.
  ASSERT_TRUE(call(stub, &Stub::StartWorkflow, typed_start("t", "terminated"), &started).ok());
  v1::TerminateWorkflowRequest terminate;
  terminate.mutable_workflow_execution()->set_workflow_id("t");
  v1::TerminateWorkflowResponse terminated;
  ASSERT_TRUE(call(stub, &Stub::TerminateWorkflow, terminate, &terminated).ok());

  // One runs an activity, then a timer, then completes.
  ASSERT_TRUE(call(stub, &Stub::StartWorkflow, typed_start("c", "completes"), &started).ok());
  v1::PollWorkflowTaskResponse task = next_workflow_task(stub);
  ASSERT_EQ(task.workflow_execution().workflow_id(), "c");
  ASSERT_TRUE(complete(stub, task.task_token(), {schedule("a")}).ok());
  v1::CompleteActivityRequest done;
  done.set_task_token(next_activity_task(stub).task_token());
  v1::CompleteActivityResponse activity_completed;
  ASSERT_TRUE(call(stub, &Stub::CompleteActivity, done, &activity_completed).ok());
  ASSERT_TRUE(complete(stub, next_workflow_task(stub).task_token(), {start_timer("z")}).ok());
  ASSERT_TRUE(complete(stub, next_workflow_task(stub).task_token(), {finish("ok")}).ok());

  // A blob uploaded (claim-check).
  {
    grpc::ClientContext context;
    v1::PutPayloadResponse uploaded;
    auto writer = stub.PutPayload(&context, &uploaded);
    v1::PutPayloadChunk chunk;
    chunk.set_data(std::string(5000, 'b'));
    ASSERT_TRUE(writer->Write(chunk));
    writer->WritesDone();
    ASSERT_TRUE(writer->Finish().ok());
  }

  // One waits for a worker: the queue's backlog.
  ASSERT_TRUE(call(stub, &Stub::StartWorkflow, typed_start("w", "waits"), &started).ok());

  // An error: a workflow that does not exist.
  grpc::Status missing;
  describe(stub, "nobody", &missing);
  ASSERT_EQ(missing.error_code(), grpc::StatusCode::NOT_FOUND);

  const std::string answer = scrape_metrics(server.metrics_address());
  ASSERT_NE(answer.find("HTTP/1.1 200"), std::string::npos) << answer;
  EXPECT_NE(answer.find("Content-Type: text/plain; version=0.0.4"), std::string::npos) << answer;
  const std::string page = answer.substr(answer.find("\r\n\r\n") + 3);  // keeps a '\n' before the first line

  for (const char* type : {"fails", "terminated", "completes", "waits"}) {
    EXPECT_EQ(value_of(page, std::string("workflow_started_total{workflow_type=\"") + type + "\"}"), 1) << type;
  }
  EXPECT_EQ(value_of(page, "workflow_closed_total{workflow_type=\"completes\",status=\"success\"}"), 1) << page;
  EXPECT_EQ(value_of(page, "workflow_closed_total{workflow_type=\"fails\",status=\"failed\"}"), 1);
  EXPECT_EQ(value_of(page, "workflow_closed_total{workflow_type=\"terminated\",status=\"terminate\"}"), 1);

  // Every call counted once, its latency observed once.
  EXPECT_EQ(value_of(page, "service_requests_total{operation=\"StartWorkflow\"}"), 4);
  EXPECT_EQ(value_of(page, "service_latency_seconds_count{operation=\"StartWorkflow\"}"), 4);
  EXPECT_EQ(value_of(page, "service_latency_seconds_bucket{operation=\"StartWorkflow\",le=\"+Inf\"}"), 4);
  EXPECT_EQ(value_of(page, "service_requests_total{operation=\"CompleteWorkflowTask\"}"), 4);
  EXPECT_EQ(value_of(page, "service_requests_total{operation=\"TerminateWorkflow\"}"), 1);
  EXPECT_EQ(value_of(page, "service_errors_total{operation=\"DescribeWorkflow\",status_code=\"NOT_FOUND\"}"), 1);
  EXPECT_EQ(page.find("service_errors_total{operation=\"StartWorkflow\""), std::string::npos);

  EXPECT_EQ(value_of(page, "timer_fired_total{kind=\"user_timer\"}"), 1);
  EXPECT_EQ(value_of(page, "task_schedule_to_start_latency_seconds_count{task_type=\"activity\",sticky=\"false\"}"), 1);
  EXPECT_EQ(value_of(page, "task_schedule_to_start_latency_seconds_count{task_type=\"workflow\",sticky=\"false\"}"), 4);
  EXPECT_EQ(value_of(page, "approximate_backlog_count{task_queue=\"q\",task_type=\"workflow\"}"), 1);

  EXPECT_GT(value_of(page, "persistence_commit_batch_size_count"), 0);
  EXPECT_GT(value_of(page, "persistence_commit_latency_seconds_count"), 0);
  EXPECT_GT(value_of(page, "persistence_fsync_total{file=\"wal\"}"), 0);
  EXPECT_GT(value_of(page, "persistence_transitions_total"), 0);
  EXPECT_GT(value_of(page, "persistence_file_size_bytes{file=\"database\"}"), 0);
  EXPECT_EQ(value_of(page, "persistence_blobs"), 1);
  EXPECT_EQ(value_of(page, "persistence_blob_bytes"), 5000);
  EXPECT_EQ(value_of(page, "service_requests_total{operation=\"PutPayload\"}"), 1);
  // The runs this server committed are kept: their next steps and task histories read memory.
  EXPECT_GT(value_of(page, "execution_cache_entries"), 0);
  EXPECT_GT(value_of(page, "execution_cache_bytes"), 0);
  EXPECT_GT(value_of(page, "execution_cache_reads_total{read=\"state\",result=\"hit\"}"), 0);
  EXPECT_GT(value_of(page, "execution_cache_reads_total{read=\"history\",result=\"hit\"}"), 0);
  EXPECT_EQ(server.terminate(), 0);
}

// --execution-cache-entries 0: nothing kept, every read goes to the database.
TEST(ServerMetrics, AServerWithoutTheExecutionCacheReadsEverythingFromTheDatabase) {
  TempDir dir;
  Server server(dir.file("uncached.db"), {"--metrics-listen", "127.0.0.1:0", "--execution-cache-entries", "0"});
  Stub& stub = server.stub();
  v1::StartWorkflowResponse started;
  ASSERT_TRUE(call(stub, &Stub::StartWorkflow, typed_start("c", "completes"), &started).ok());
  ASSERT_TRUE(complete(stub, next_workflow_task(stub).task_token(), {finish("ok")}).ok());
  const std::string answer = scrape_metrics(server.metrics_address());
  const std::string page = answer.substr(answer.find("\r\n\r\n") + 3);
  EXPECT_EQ(value_of(page, "execution_cache_entries"), 0) << page;
  EXPECT_EQ(value_of(page, "execution_cache_reads_total{read=\"state\",result=\"hit\"}"), 0);
  EXPECT_GT(value_of(page, "execution_cache_reads_total{read=\"state\",result=\"miss\"}"), 0);
  EXPECT_GT(value_of(page, "execution_cache_reads_total{read=\"history\",result=\"miss\"}"), 0);
  EXPECT_EQ(server.terminate(), 0);
}

TEST(ServerMetrics, BadHttpClientsWedgeNeitherTheListenerNorTheGrpcPort) {
  TempDir dir;
  Server server(dir.file("hostile.db"), {"--metrics-listen", "127.0.0.1:0"});
  ASSERT_FALSE(server.metrics_address().empty());

  // Garbage is answered (400) or dropped, at once.
  const std::string garbage =
      http_exchange(server.metrics_address(), std::string("\x01\x02 \xff\r\n\r\n", 8), std::chrono::seconds(5));
  EXPECT_TRUE(garbage.empty() || garbage.find("HTTP/1.1 400") != std::string::npos) << garbage;

  // Clients that never finish their request line, more than the listener
  // has threads, held open while others scrape.
  std::vector<int> stalled;
  for (int i = 0; i < 3; ++i) {
    const int fd = connect_to_loopback(server.metrics_address());
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::send(fd, "GET /met", 8, MSG_NOSIGNAL), 8);
    stalled.push_back(fd);
  }
  // The gRPC port does not notice.
  const auto grpc_start = std::chrono::steady_clock::now();
  grpc::Status missing;
  describe(server.stub(), "nobody", &missing);
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_LT(std::chrono::steady_clock::now() - grpc_start, std::chrono::seconds(1));

  // A scrape gets its answer once the read timeout (1 s) has cut the
  // stalled clients off.
  const auto scrape_start = std::chrono::steady_clock::now();
  const std::string answer = scrape_metrics(server.metrics_address());
  EXPECT_NE(answer.find("HTTP/1.1 200"), std::string::npos) << answer;
  EXPECT_NE(answer.find("service_requests_total{operation=\"DescribeWorkflow\"} 1"), std::string::npos) << answer;
  EXPECT_LT(std::chrono::steady_clock::now() - scrape_start, std::chrono::seconds(5));
  for (int fd : stalled) ::close(fd);
  EXPECT_EQ(server.terminate(), 0);
}

}  // namespace
}  // namespace reprise
