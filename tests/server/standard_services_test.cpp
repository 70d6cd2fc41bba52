// The standard services reprise-server serves beside its own: health checking
// (grpc.health.v1, what grpc_health_probe, Kubernetes and load balancers ask)
// following the store's ability to write and a shutdown, and reflection (grpcurl).
#include <google/protobuf/descriptor.pb.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "health.grpc.pb.h"
#include "reflection.grpc.pb.h"
#include "server_harness.hpp"

namespace reprise {
namespace {

using HealthStatus = grpc::health::v1::HealthCheckResponse;

// The status Check answers for `service`, or the call's failure.
grpc::Status check_health(const Server& server, const std::string& service, HealthStatus::ServingStatus* status) {
  auto stub =
      grpc::health::v1::Health::NewStub(grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  HealthStatus response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Status s = stub->Check(&context, request, &response);
  *status = response.status();
  return s;
}

// Asks Check until it answers `want` or `limit` passes; the status last seen.
HealthStatus::ServingStatus await_health(const Server& server, HealthStatus::ServingStatus want,
                                         std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  HealthStatus::ServingStatus status = HealthStatus::UNKNOWN;
  while (std::chrono::steady_clock::now() < deadline) {
    if (check_health(server, "", &status).ok() && status == want) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return status;
}

TEST(StandardServices, HealthIsServingForTheServerAndTheWorkflowServiceAndNotFoundForOthers) {
  TempDir dir;
  Server server(dir.file("db"));
  for (const std::string service : {"", "reprise.v1.WorkflowService"}) {
    HealthStatus::ServingStatus status = HealthStatus::UNKNOWN;
    ASSERT_TRUE(check_health(server, service, &status).ok()) << "'" << service << "'";
    EXPECT_EQ(status, HealthStatus::SERVING) << "'" << service << "'";
  }
  HealthStatus::ServingStatus status = HealthStatus::UNKNOWN;
  EXPECT_EQ(check_health(server, "no.such.Service", &status).error_code(), grpc::StatusCode::NOT_FOUND);
}

// One request on the reflection stream and its answer.
grpc::reflection::v1alpha::ServerReflectionResponse reflect(
    const Server& server, const grpc::reflection::v1alpha::ServerReflectionRequest& request) {
  auto stub = grpc::reflection::v1alpha::ServerReflection::NewStub(
      grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  auto stream = stub->ServerReflectionInfo(&context);
  grpc::reflection::v1alpha::ServerReflectionResponse response;
  EXPECT_TRUE(stream->Write(request));
  stream->WritesDone();
  EXPECT_TRUE(stream->Read(&response));
  EXPECT_TRUE(stream->Finish().ok());
  return response;
}

TEST(StandardServices, ReflectionListsTheServicesAndDescribesTheWorkflowService) {
  TempDir dir;
  Server server(dir.file("db"));

  grpc::reflection::v1alpha::ServerReflectionRequest list;
  list.set_list_services("");
  const auto listed = reflect(server, list);
  ASSERT_TRUE(listed.has_list_services_response()) << listed.DebugString();
  std::set<std::string> names;
  for (const auto& service : listed.list_services_response().service()) names.insert(service.name());
  EXPECT_TRUE(names.count("reprise.v1.WorkflowService")) << listed.DebugString();
  EXPECT_TRUE(names.count("grpc.health.v1.Health")) << listed.DebugString();

  grpc::reflection::v1alpha::ServerReflectionRequest describe;
  describe.set_file_containing_symbol("reprise.v1.WorkflowService");
  const auto described = reflect(server, describe);
  ASSERT_TRUE(described.has_file_descriptor_response()) << described.DebugString();
  // The file that declares the service comes first, its imports after it.
  bool found = false;
  for (const std::string& bytes : described.file_descriptor_response().file_descriptor_proto()) {
    google::protobuf::FileDescriptorProto file;
    ASSERT_TRUE(file.ParseFromString(bytes));
    for (const auto& service : file.service()) {
      if (service.name() != "WorkflowService") continue;
      found = true;
      EXPECT_EQ(file.name(), "reprise/v1/service.proto");
      std::set<std::string> methods;
      for (const auto& method : service.method()) methods.insert(method.name());
      EXPECT_TRUE(methods.count("StartWorkflow"));
      EXPECT_TRUE(methods.count("PollWorkflowTask"));
    }
  }
  EXPECT_TRUE(found) << "no WorkflowService in the descriptors reflection sent";
}

// RLIMIT_FSIZE on the running server stands in for a disk that fills up and
// then gets room again: writes past the limit fail with EFBIG, as on a full
// disk (the server's store names the limit as the problem).
// Only the soft limit moves: raising a hard limit takes CAP_SYS_RESOURCE.
void limit_file_size(pid_t pid, rlim_t bytes) {
  rlimit limit{};
  ASSERT_EQ(::prlimit(pid, RLIMIT_FSIZE, nullptr, &limit), 0) << std::strerror(errno);
  limit.rlim_cur = bytes;
  ASSERT_EQ(::prlimit(pid, RLIMIT_FSIZE, &limit, nullptr), 0) << std::strerror(errno);
}

// The statuses a Watch of "" (the whole server) streams, each with when it
// arrived, from its opening until the stream ends or the watch goes.
class HealthWatch {
 public:
  struct Seen {
    HealthStatus::ServingStatus status;
    std::chrono::steady_clock::time_point at;
  };

  explicit HealthWatch(const Server& server)
      : stub_(grpc::health::v1::Health::NewStub(
            grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()))) {
    reader_ = std::thread([this] {
      grpc::health::v1::HealthCheckRequest request;
      auto stream = stub_->Watch(&context_, request);
      HealthStatus response;
      while (stream->Read(&response)) {
        std::lock_guard lock(mu_);
        seen_.push_back({response.status(), std::chrono::steady_clock::now()});
        changed_.notify_all();
      }
      stream->Finish();
      std::lock_guard lock(mu_);
      ended_ = true;
      changed_.notify_all();
    });
  }
  ~HealthWatch() {
    context_.TryCancel();
    reader_.join();
  }
  // What arrived once there are `n` statuses, the stream ended or `limit` passed.
  std::vector<Seen> wait_for(size_t n, std::chrono::seconds limit) {
    std::unique_lock lock(mu_);
    changed_.wait_for(lock, limit, [&] { return seen_.size() >= n || ended_; });
    return seen_;
  }

 private:
  std::unique_ptr<grpc::health::v1::Health::Stub> stub_;
  grpc::ClientContext context_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<Seen> seen_;
  bool ended_ = false;
  std::thread reader_;
};

std::vector<HealthStatus::ServingStatus> watched_statuses(const std::vector<HealthWatch::Seen>& seen) {
  std::vector<HealthStatus::ServingStatus> out;
  for (const auto& s : seen) out.push_back(s.status);
  return out;
}

std::string health_log_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

uintmax_t size_or_zero(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  return ec ? 0 : size;
}

TEST(StandardServices, HealthIsNotServingWhileTheStoreCannotWriteAndServingOnceItCan) {
  // A write past the limit gets EFBIG rather than a SIGXFSZ that kills the
  // server (an ignored signal stays ignored across exec).
  ::signal(SIGXFSZ, SIG_IGN);
  TempDir dir;
  const std::string db = dir.file("db");
  const std::string log = dir.file("server.log");
  Server server(db, {"--log-level", "info"}, log);
  ASSERT_EQ(await_health(server, HealthStatus::SERVING, std::chrono::seconds(5)), HealthStatus::SERVING);
  HealthWatch watch(server);
  ASSERT_EQ(watched_statuses(watch.wait_for(1, std::chrono::seconds(5))), std::vector{HealthStatus::SERVING});

  // Room for a few starts, then none: a start stalls and times out.
  const rlim_t room = std::max(size_or_zero(db), size_or_zero(db + "-wal")) + (256 << 10);
  limit_file_size(server.pid(), room);
  // Random bytes: the history is stored compressed.
  std::mt19937_64 random(42);
  std::string input(32 << 10, '\0');
  for (char& c : input) c = static_cast<char>(random());
  bool stalled = false;
  for (int i = 0; i < 200 && !stalled; ++i) {
    v1::StartWorkflowRequest start = start_request("fill-" + std::to_string(i));
    start.mutable_input()->add_payloads()->set_data(input);
    v1::StartWorkflowResponse out;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    stalled = !server.stub().StartWorkflow(&context, start, &out).ok();
  }
  ASSERT_TRUE(stalled) << "200 starts of 32 KiB fitted in " << room << " bytes";

  EXPECT_EQ(await_health(server, HealthStatus::NOT_SERVING, std::chrono::seconds(10)), HealthStatus::NOT_SERVING);
  v1::HealthResponse own;
  ASSERT_TRUE(call(server.stub(), &Stub::Health, v1::HealthRequest(), &own).ok());
  EXPECT_EQ(own.status(), "NOT_SERVING");
  ASSERT_EQ(own.problems_size(), 1);
  EXPECT_NE(own.problems(0).find("file size limit"), std::string::npos) << own.problems(0);

  limit_file_size(server.pid(), RLIM_INFINITY);
  EXPECT_EQ(await_health(server, HealthStatus::SERVING, std::chrono::seconds(30)), HealthStatus::SERVING);
  v1::StartWorkflowResponse out;
  EXPECT_TRUE(call(server.stub(), &Stub::StartWorkflow, start_request("after"), &out).ok());

  // A Watch sees each change once, in order; each change is logged.
  EXPECT_EQ(watched_statuses(watch.wait_for(3, std::chrono::seconds(5))),
            (std::vector{HealthStatus::SERVING, HealthStatus::NOT_SERVING, HealthStatus::SERVING}));
  EXPECT_EQ(server.terminate(), 0);
  const std::string logged = health_log_text(log);
  const size_t down = logged.find("level=warn msg=\"health: not serving\" problem=");
  ASSERT_NE(down, std::string::npos) << logged;
  EXPECT_NE(logged.find("file size limit", down), std::string::npos) << logged;
  EXPECT_NE(logged.find("level=info msg=\"health: serving again\"", down), std::string::npos) << logged;
}

// A shutdown (SIGTERM) reports NOT_SERVING as it begins, before the parked
// polls are answered, so a balancer stops sending work first. gRPC's own
// shutdown alone would report it only after its 200 ms grace, if at all.
TEST(StandardServices, HealthIsNotServingFromTheMomentAShutdownBegins) {
  TempDir dir;
  // Polls wait a minute here: the parked one ends only when the shutdown answers it.
  Server server(dir.file("db"), {"--poll-timeout-ms", "60000"});
  HealthWatch watch(server);
  ASSERT_EQ(watched_statuses(watch.wait_for(1, std::chrono::seconds(5))), std::vector{HealthStatus::SERVING});
  std::atomic<bool> answered{false};
  std::chrono::steady_clock::time_point answered_at;
  std::thread poller([&] {
    v1::PollWorkflowTaskRequest r;
    r.mutable_task_queue()->set_name("nothing-here");
    v1::PollWorkflowTaskResponse out;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(90));
    (void)server.stub().PollWorkflowTask(&context, r, &out);
    answered_at = std::chrono::steady_clock::now();
    answered = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_FALSE(answered) << "the poll should be parked";
  EXPECT_EQ(server.terminate(), 0);
  poller.join();
  const std::vector<HealthWatch::Seen> seen = watch.wait_for(2, std::chrono::seconds(5));
  ASSERT_EQ(watched_statuses(seen), (std::vector{HealthStatus::SERVING, HealthStatus::NOT_SERVING}))
      << "no NOT_SERVING before the server stopped";
  // Both answers are written within microseconds of each other; 100 ms
  // covers the scheduling of this process's two reader threads.
  EXPECT_LT(seen[1].at, answered_at + std::chrono::milliseconds(100))
      << "NOT_SERVING came " << std::chrono::duration_cast<std::chrono::milliseconds>(seen[1].at - answered_at).count()
      << " ms after the parked poll was answered";
}

}  // namespace
}  // namespace reprise
