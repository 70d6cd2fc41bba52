// Claim-check through reprise-server: large payloads leave history for the
// blob store on the way in, uploads with PutPayload can be referenced, and the
// blob limit and unknown references are refused with a clear error; and a
// shutdown while uploads end leaves no stream touching the closed store.
#include <signal.h>

#include <condition_variable>
#include <latch>
#include <mutex>
#include <thread>

#include "server_harness.hpp"

namespace reprise {
namespace {

std::string big(size_t n, char fill) { return std::string(n, fill); }

std::string get_payload(Stub& stub, const std::string& sha256) {
  grpc::ClientContext context;
  v1::GetPayloadRequest r;
  r.set_sha256(sha256);
  auto reader = stub.GetPayload(&context, r);
  std::string bytes;
  v1::GetPayloadChunk chunk;
  while (reader->Read(&chunk)) bytes += chunk.data();
  EXPECT_TRUE(reader->Finish().ok());
  return bytes;
}

grpc::Status put_payload(Stub& stub, const std::string& bytes, v1::PutPayloadResponse& out) {
  grpc::ClientContext context;
  auto writer = stub.PutPayload(&context, &out);
  constexpr size_t kChunk = 1 << 20;
  for (size_t at = 0; at < bytes.size(); at += kChunk) {
    v1::PutPayloadChunk chunk;
    chunk.set_data(bytes.substr(at, kChunk));
    if (!writer->Write(chunk)) break;
  }
  writer->WritesDone();
  return writer->Finish();
}

TEST(ClaimCheck, ALargeInputIsMovedOutOfHistoryAndReadBackByHash) {
  TempDir dir;
  Server server(dir.file("claims.db"));
  v1::StartWorkflowRequest start = start_request("big-1");
  const std::string input = big(300 * 1024, 'x');
  start.mutable_input()->add_payloads()->set_data(input);
  v1::StartWorkflowResponse started;
  ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start, &started).ok());

  auto task = poll_workflow(server.stub());
  const v1::Payload& stored = task.history().events(0).workflow_execution_started().input().payloads(0);
  EXPECT_TRUE(stored.data().empty()) << "history holds a reference, not 300 KiB";
  ASSERT_EQ(stored.external().size(), static_cast<int64_t>(input.size()));
  EXPECT_EQ(get_payload(server.stub(), stored.external().sha256()), input);

  // A small one stays inline.
  ASSERT_TRUE(complete(server.stub(), task.task_token(), {finish("small")}).ok());
  v1::GetHistoryRequest h;
  h.mutable_workflow_execution()->set_workflow_id("big-1");
  v1::GetHistoryResponse history;
  ASSERT_TRUE(call(server.stub(), &Stub::GetHistory, h, &history).ok());
  const auto& last = history.history().events(history.history().events_size() - 1);
  EXPECT_EQ(last.workflow_execution_completed().result().payloads(0).data(), "small");
}

TEST(ClaimCheck, AnUploadedBlobCanBeReferencedAndUnknownOnesAreRefused) {
  TempDir dir;
  Server server(dir.file("uploads.db"));
  const std::string value = big(3 * 1024 * 1024 + 17, 'u');
  v1::PutPayloadResponse uploaded;
  ASSERT_TRUE(put_payload(server.stub(), value, uploaded).ok());
  EXPECT_EQ(uploaded.size(), static_cast<int64_t>(value.size()));

  v1::StartWorkflowRequest start = start_request("ref-1");
  auto* ref = start.mutable_input()->add_payloads()->mutable_external();
  ref->set_sha256(uploaded.sha256());
  ref->set_size(uploaded.size());
  v1::StartWorkflowResponse started;
  ASSERT_TRUE(call(server.stub(), &Stub::StartWorkflow, start, &started).ok());
  auto task = poll_workflow(server.stub());
  EXPECT_EQ(task.history().events(0).workflow_execution_started().input().payloads(0).external().sha256(),
            uploaded.sha256());
  EXPECT_EQ(get_payload(server.stub(), uploaded.sha256()), value);

  v1::StartWorkflowRequest dangling = start_request("ref-2");
  auto* unknown = dangling.mutable_input()->add_payloads()->mutable_external();
  unknown->set_sha256(std::string(32, '\x01'));
  unknown->set_size(10);
  grpc::Status s = call(server.stub(), &Stub::StartWorkflow, dangling, &started);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("which namespace 'default' does not have (upload it there with PutPayload first)"),
            std::string::npos)
      << s.error_message();
}

TEST(ClaimCheck, PayloadsOverTheBlobLimitAreRefusedAndNothingIsStarted) {
  TempDir dir;
  Server server(dir.file("limits.db"), {"--blob-limit-bytes", "1048576"});
  v1::PutPayloadResponse uploaded;
  grpc::Status s = put_payload(server.stub(), big(2 * 1024 * 1024, 'L'), uploaded);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "the payload is over the blob limit of 1048576 bytes");

  v1::StartWorkflowRequest start = start_request("too-big");
  start.mutable_input()->add_payloads()->set_data(big(1536 * 1024, 'L'));
  v1::StartWorkflowResponse started;
  s = call(server.stub(), &Stub::StartWorkflow, start, &started);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "a payload of 1.5 MiB is over the blob limit of 1.0 MiB");
  v1::DescribeWorkflowRequest d;
  d.mutable_workflow_execution()->set_workflow_id("too-big");
  v1::DescribeWorkflowResponse described;
  EXPECT_EQ(call(server.stub(), &Stub::DescribeWorkflow, d, &described).error_code(), grpc::StatusCode::NOT_FOUND);
}

// Uploads refused over the blob limit leave their unfinished blobs to be
// deleted after their streams are done (the writer's destructor, a store
// write per upload, on the service's blob pool), and SIGTERM comes as they
// are refused: the server must let those deletes finish before it closes the
// store, and exit cleanly. The uploads send their last, refused chunk all at
// once, so more deletes wait than the pool has threads. Before the service
// waited for its streams, deletes ran during and after the store's teardown
// (seen with timestamps; a release build rarely crashes on it, ASan would).
TEST(ClaimCheck, SigtermWhileRefusedUploadsAreDiscardedExitsCleanly) {
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer spends minutes per round checking gRPC's copies of 80 MB
  // against its suppressions; a smaller round still races the discards
  // against the shutdown.
  constexpr int kUploads = 4, kRounds = 1;
  constexpr size_t kLimit = 2 << 20;
#else
  constexpr int kUploads = 10, kRounds = 3;
  constexpr size_t kLimit = 8 << 20;
#endif
  constexpr size_t kChunk = 1 << 20;
  const std::string chunk_bytes = big(kChunk, 'U');
  for (int round = 0; round < kRounds; ++round) {
    TempDir dir;
    Server server(dir.file("shutdown.db"), {"--blob-limit-bytes", std::to_string(kLimit)});
    std::latch at_limit(kUploads);
    std::vector<std::thread> uploads;
    std::vector<grpc::Status> outcomes(kUploads);
    for (int i = 0; i < kUploads; ++i) {
      uploads.emplace_back([&, i] {
        // A channel each, gone before SIGTERM: no idle connection holds the
        // server's shutdown for its grace period.
        auto stub = v1::WorkflowService::NewStub(
            grpc::CreateCustomChannel(server.address(), grpc::InsecureChannelCredentials(), [i] {
              grpc::ChannelArguments args;
              args.SetInt("upload", i);  // not shared with the other uploads' channels
              return args;
            }()));
        grpc::ClientContext context;
        v1::PutPayloadResponse out;
        auto writer = stub->PutPayload(&context, &out);
        v1::PutPayloadChunk chunk;
        chunk.set_data(chunk_bytes);
        bool open = true;
        for (size_t sent = 0; sent < kLimit && open; sent += kChunk) open = writer->Write(chunk);
        at_limit.arrive_and_wait();
        // Time for the server to store what was sent, so the refusals (which
        // write nothing) come together and their deletes queue up.
        std::this_thread::sleep_for(std::chrono::milliseconds(2000));
        if (open) writer->Write(chunk);  // over the limit: refused
        writer->WritesDone();
        outcomes[i] = writer->Finish();
      });
    }
    for (auto& t : uploads) t.join();
    for (const grpc::Status& s : outcomes)
      EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();

    // A hang (a discard waiting on a stopped store) fails too, not forever.
    std::mutex mu;
    std::condition_variable cv;
    bool exited = false;
    std::thread watchdog([&] {
      std::unique_lock lock(mu);
      if (!cv.wait_for(lock, std::chrono::seconds(30), [&] { return exited; })) server.signal(SIGKILL);
    });
    const int status = server.terminate();
    {
      std::lock_guard lock(mu);
      exited = true;
    }
    cv.notify_all();
    watchdog.join();
    EXPECT_EQ(status, 0) << "round " << round << ": wait status " << status << " (signal " << (status & 0x7f)
                         << "), last line: " << server.last_line();
    EXPECT_EQ(server.last_line(), "reprise-server: stopped cleanly") << "round " << round;
  }
}

// SIGTERM while a large upload is still streaming: the server cancels the
// call at its shutdown deadline and exits cleanly; the client gets an error.
TEST(ClaimCheck, SigtermDuringALargeUploadExitsCleanly) {
  const std::string chunk_bytes = big(1 << 20, 'S');
  for (int round = 0; round < 3; ++round) {
    TempDir dir;
    Server server(dir.file("upload.db"));
    grpc::ClientContext context;
    v1::PutPayloadResponse out;
    auto writer = server.stub().PutPayload(&context, &out);
    v1::PutPayloadChunk chunk;
    chunk.set_data(chunk_bytes);
    for (int i = 0; i < 16; ++i) ASSERT_TRUE(writer->Write(chunk));
    std::thread terminate([&] { EXPECT_EQ(server.terminate(), 0) << "round " << round; });
    // Still sending (up to 512 MiB) until the server gives up on the call.
    for (int i = 0; i < 512 && writer->Write(chunk); ++i) {
    }
    writer->WritesDone();
    const grpc::Status s = writer->Finish();
    terminate.join();
    EXPECT_EQ(server.last_line(), "reprise-server: stopped cleanly") << "round " << round;
    EXPECT_FALSE(s.ok()) << "round " << round << ": a canceled upload is not acknowledged";
  }
}

}  // namespace
}  // namespace reprise
