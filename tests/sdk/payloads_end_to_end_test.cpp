// Large payloads through a real server: a 50 MB value passed between
// activities as a Ref (the workflow never loads it, history stays small),
// and a big activity result the SDK uploads on its own and the workflow
// reads lazily.
#include <cstdlib>
#include <random>

#include "../server/server_harness.hpp"
#include "reprise/client.hpp"
#include "reprise/worker.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

// 50 MB; sanitizer runs (10-20x slower) set REPRISE_TEST_PAYLOAD_MB lower.
const size_t kReportBytes =
    static_cast<size_t>(std::getenv("REPRISE_TEST_PAYLOAD_MB") ? std::atoll(std::getenv("REPRISE_TEST_PAYLOAD_MB"))
                                                               : 50)
    << 20;

std::string noise(size_t bytes, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::string out(bytes, '\0');
  for (size_t i = 0; i + 8 <= bytes; i += 8) {
    const uint64_t r = random();
    std::memcpy(out.data() + i, &r, 8);
  }
  return out;
}

Ref<std::string> build_report(ActivityContext& ctx, int64_t seed) {
  return ctx.store(noise(kReportBytes, static_cast<uint64_t>(seed)));
}
int64_t publish_report(ActivityContext& ctx, Ref<std::string> report) {
  const std::string bytes = ctx.load(report);
  return static_cast<int64_t>(bytes.size()) + (bytes == noise(kReportBytes, 7) ? 0 : 1'000'000'000);
}
std::string snapshot(ActivityContext&, int64_t bytes) { return noise(static_cast<size_t>(bytes), 3); }
inline constexpr Activity<&build_report> build{"build_report"};
inline constexpr Activity<&publish_report> publish{"publish_report"};
inline constexpr Activity<&snapshot> take_snapshot{"snapshot"};

Workflow<int64_t> report_pipeline(WorkflowContext& ctx, int64_t seed) {
  const auto options = ActivityOptions::start_to_close(2min);
  Ref<std::string> report = co_await ctx.execute(build, options, seed);
  co_return co_await ctx.execute(publish, options, report);
}
inline constexpr WorkflowDef<&report_pipeline> pipeline_wf{"report_pipeline"};

Workflow<int64_t> snapshot_size(WorkflowContext& ctx, int64_t bytes) {
  std::string data = co_await ctx.execute(take_snapshot, ActivityOptions::start_to_close(1min), bytes);
  co_return static_cast<int64_t>(data.size());
}
inline constexpr WorkflowDef<&snapshot_size> snapshot_wf{"snapshot_size"};

TEST(SdkPayloads, AFiftyMegabyteReportTravelsByReferenceAndHistoryStaysSmall) {
  TempDir dir;
  Server server(dir.file("payloads.db"));
  auto connection = Connection::remote(server.address());
  Worker worker(connection, {.task_queue = "reports", .workflow_threads = 1, .activity_threads = 2});
  worker.register_workflow(pipeline_wf);
  worker.register_workflow(snapshot_wf);
  worker.register_activity(build);
  worker.register_activity(publish);
  worker.register_activity(take_snapshot);
  worker.start();
  Client client(connection);

  auto run = client.start(pipeline_wf, {.id = "report", .task_queue = "reports"}, int64_t{7});
  EXPECT_EQ(run.result(2min), static_cast<int64_t>(kReportBytes)) << "the bytes arrived whole";
  EXPECT_LT(run.describe().info().history_size_bytes(), 8 * 1024) << "history holds the reference, not the report";

  // 3 MiB of incompressible bytes returned as a plain value: the worker
  // uploads it, the workflow fetches it when it reads the result.
  auto big = client.start(snapshot_wf, {.id = "snapshot", .task_queue = "reports"}, int64_t{3 << 20});
  EXPECT_EQ(big.result(1min), int64_t{3 << 20});
  EXPECT_LT(big.describe().info().history_size_bytes(), 8 * 1024);
  worker.stop();
}

}  // namespace
}  // namespace reprise
