// The `reprise` command line against a real server and a worker in this
// process: JSON in and out, every workflow command, history export that the
// replay tester reads, and clear errors for bad command lines.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "../server/server_harness.hpp"
#include "reprise/testing.hpp"
#include "reprise/worker.hpp"
#include "tests/cli/run_cli.hpp"

namespace reprise {
namespace {

using namespace std::chrono_literals;

struct Order {
  std::string id;
  int64_t cents = 0;
  std::vector<std::string> items;
  MSGPACK_DEFINE_MAP(id, cents, items);
};

std::string charge(ActivityContext&, Order order) { return "receipt-" + order.id; }
inline constexpr Activity<&charge> charge_card{"charge"};

inline constexpr Signal<std::string> approve{"approve"};
inline constexpr Query<int64_t> cents_query{"cents"};

struct Receipt {
  std::string receipt;
  std::string approved_by;
  int64_t cents = 0;
  MSGPACK_DEFINE_MAP(receipt, approved_by, cents);
};

Workflow<Receipt> checkout(WorkflowContext& ctx, Order order) {
  ctx.on_query(cents_query, [&order] { return order.cents; });
  std::string receipt = co_await ctx.execute(charge_card, ActivityOptions::start_to_close(10s), order);
  std::string by = co_await ctx.wait(approve);
  co_return Receipt{receipt, by, order.cents};
}
inline constexpr WorkflowDef<&checkout> checkout_wf{"checkout"};

TEST(Cli, DrivesAWorkflowFromStartToResultWithJson) {
  TempDir dir;
  Server server(dir.file("cli.db"));
  auto connection = Connection::remote(server.address());
  Worker worker(connection, {.task_queue = "shop", .workflow_threads = 1, .activity_threads = 1});
  worker.register_workflow(checkout_wf);
  worker.register_activity(charge_card);
  worker.start();
  const std::string& a = server.address();

  Output started = cli(
      a,
      R"(workflow start --type checkout --id o-1 --task-queue shop --input '{"id":"o-1","cents":9007199254740993,"items":["tea"]}')");
  ASSERT_EQ(started.status, 0) << started.out;
  EXPECT_EQ(started.out.rfind("started o-1 (run ", 0), 0u) << started.out;

  Output early = cli(a, "workflow result --id o-1 --timeout 0.2");
  EXPECT_EQ(early.status, 1);
  EXPECT_NE(early.out.find("did not close within 200 ms"), std::string::npos) << early.out;

  Output query;
  for (int i = 0; i < 100; ++i) {
    query = cli(a, "workflow query --id o-1 --name cents");
    if (query.status == 0) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(query.out, "9007199254740993\n") << "integers above 2^53 stay exact";

  Output signaled = cli(a, R"(workflow signal --id o-1 --name approve --input '"ana"')");
  EXPECT_EQ(signaled.status, 0) << signaled.out;
  Output result = cli(a, "--output json workflow result --id o-1");
  ASSERT_EQ(result.status, 0) << result.out;
  EXPECT_NE(result.out.find(R"("approved_by": "ana")"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find(R"("receipt": "receipt-o-1")"), std::string::npos) << result.out;

  Output describe = cli(a, "workflow describe --id o-1");
  EXPECT_NE(describe.out.find("status     completed"), std::string::npos) << describe.out;
  Output show = cli(a, "workflow show --id o-1");
  EXPECT_NE(show.out.find(R"(ActivityTaskScheduled  'charge' id=1 input=[{"cents":9007199254740993)"),
            std::string::npos)
      << show.out;
  EXPECT_NE(show.out.find("WorkflowExecutionSignaled  'approve' input=[\"ana\"]"), std::string::npos) << show.out;
  Output list = cli(a, "workflow list --status completed");
  EXPECT_NE(list.out.find("o-1"), std::string::npos) << list.out;

  Output exported = cli(a, "history export --id o-1 --file " + dir.file("o-1.json"));
  ASSERT_EQ(exported.status, 0) << exported.out;
  EXPECT_NO_THROW(testing::replay(dir.file("o-1.json"), checkout_wf));

  Output executed = cli(
      a,
      R"(workflow execute --type checkout --id o-2 --task-queue shop --input '{"id":"o-2","cents":5,"items":[]}' --timeout 0.3)");
  EXPECT_EQ(executed.status, 1) << "it waits for a signal that never comes: " << executed.out;
  Output canceled = cli(a, "workflow terminate --id o-2 --reason test");
  EXPECT_EQ(canceled.status, 0) << canceled.out;
  Output gone = cli(a, "workflow result --id o-2");
  EXPECT_EQ(gone.out, "workflow 'o-2' was terminated: test\n");
  worker.stop();
}

TEST(Cli, AClosedWorkflowIdStartsAgainAndTheRequestIdAndReusePolicyAreHonoured) {
  TempDir dir;
  Server server(dir.file("reuse.db"));
  const std::string& a = server.address();
  const std::string start = "--output json workflow start --type checkout --id order-7 --task-queue shop";
  Output first = cli(a, start);
  ASSERT_EQ(first.status, 0) << first.out;
  EXPECT_NE(first.out.find(R"("started": true)"), std::string::npos) << first.out;
  ASSERT_EQ(cli(a, "workflow terminate --id order-7 --reason test").status, 0);
  Output second = cli(a, start);
  ASSERT_EQ(second.status, 0) << second.out;
  EXPECT_NE(second.out.find(R"("started": true)"), std::string::npos)
      << "a new run, not the terminated one: " << second.out;
  EXPECT_NE(nlohmann::json::parse(second.out)["run_id"], nlohmann::json::parse(first.out)["run_id"]);

  Output named = cli(a, start + " --id order-8 --request-id call-1");
  Output retried = cli(a, start + " --id order-8 --request-id call-1");
  EXPECT_NE(retried.out.find(R"("started": false)"), std::string::npos) << retried.out;
  EXPECT_EQ(nlohmann::json::parse(retried.out)["run_id"], nlohmann::json::parse(named.out)["run_id"]);

  ASSERT_EQ(cli(a, "workflow terminate --id order-8 --reason test").status, 0);
  Output rejected = cli(a, start + " --id order-8 --id-reuse-policy reject_duplicate");
  EXPECT_EQ(rejected.status, 1);
  EXPECT_NE(rejected.out.find("the reuse policy does not allow another"), std::string::npos) << rejected.out;
  Output bad_policy = cli(a, start + " --id order-9 --id-reuse-policy sometimes");
  EXPECT_EQ(bad_policy.status, 2);
  EXPECT_NE(bad_policy.out.find("--id-reuse-policy: sometimes not in"), std::string::npos) << bad_policy.out;
  Output help = cli(a, "workflow start --help");
  EXPECT_NE(help.out.find("--id-reuse-policy"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--request-id"), std::string::npos) << help.out;
}

Workflow<std::string> flaky(WorkflowContext& ctx) {
  if (ctx.info().attempt == 1) throw ApplicationError("Flaky", "the first run fails");
  co_return "ok on attempt " + std::to_string(ctx.info().attempt);
}
inline constexpr WorkflowDef<&flaky> flaky_wf{"flaky"};

TEST(Cli, RetryFlagsGiveTheWorkflowARetryPolicyAndExecuteWaitsForTheLastRun) {
  TempDir dir;
  Server server(dir.file("retry.db"));
  auto connection = Connection::remote(server.address());
  Worker worker(connection, {.task_queue = "shop", .workflow_threads = 1, .activity_threads = 1});
  worker.register_workflow(flaky_wf);
  worker.start();
  const std::string& a = server.address();
  Output executed = cli(a,
                        "workflow execute --type flaky --id f-1 --task-queue shop --retry-maximum-attempts 2 "
                        "--retry-initial-interval 0.2 --retry-non-retryable-types Fatal,Bad");
  EXPECT_EQ(executed.status, 0) << executed.out;
  EXPECT_NE(executed.out.find("ok on attempt 2"), std::string::npos) << executed.out;
  Output shown = cli(a, "workflow show --id f-1");
  EXPECT_NE(shown.out.find("attempt 2 backoff 200 ms"), std::string::npos) << shown.out;

  Output without = cli(a, "workflow execute --type flaky --id f-2 --task-queue shop");
  EXPECT_EQ(without.status, 1) << "no --retry-* flag, no retry: " << without.out;
  Output bad = cli(a, "workflow start --type flaky --id f-3 --task-queue shop --retry-backoff-coefficient 0.5");
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.out.find("retry_policy.backoff_coefficient must be at least 1"), std::string::npos) << bad.out;
  EXPECT_NE(cli(a, "workflow execute --help").out.find("--retry-maximum-attempts"), std::string::npos);
  worker.stop();
}

TEST(Cli, DeleteRemovesARunAndFreesItsIdForANewRun) {
  TempDir dir;
  Server server(dir.file("delete.db"));
  const std::string& a = server.address();
  auto connection = Connection::remote(a);
  Worker worker(connection, {.task_queue = "shop", .workflow_threads = 1, .activity_threads = 1});
  worker.register_workflow(checkout_wf);
  worker.register_activity(charge_card);
  worker.start();
  const std::string start =
      R"(--output json workflow start --type checkout --id order-d --task-queue shop --id-reuse-policy reject_duplicate --input '{"id":"d","cents":7,"items":[]}')";
  Output first = cli(a, start);
  ASSERT_EQ(first.status, 0) << first.out;
  const std::string first_run = nlohmann::json::parse(first.out)["run_id"];

  Output deleted = cli(a, "--output json workflow delete --id order-d");
  ASSERT_EQ(deleted.status, 0) << deleted.out;
  const auto answer = nlohmann::json::parse(deleted.out);
  EXPECT_EQ(answer["run_id"], first_run);
  EXPECT_EQ(answer["terminated"], true) << "a running run is terminated, then deleted";
  Output described = cli(a, "workflow describe --id order-d");
  EXPECT_EQ(described.status, 1);
  EXPECT_NE(described.out.find("has no runs"), std::string::npos) << described.out;
  Output shown = cli(a, "workflow show --id order-d --run-id " + first_run);
  EXPECT_EQ(shown.status, 1) << "its history is gone: " << shown.out;
  EXPECT_EQ(cli(a, "workflow list").out.find("order-d"), std::string::npos);
  Output again = cli(a, "workflow delete --id order-d");
  EXPECT_EQ(again.status, 1);
  EXPECT_NE(again.out.find("has no runs"), std::string::npos) << again.out;

  // The id is free: reject_duplicate starts it, and the new run works.
  Output second = cli(a, start);
  ASSERT_EQ(second.status, 0) << second.out;
  EXPECT_NE(second.out.find(R"("started": true)"), std::string::npos) << second.out;
  const std::string second_run = nlohmann::json::parse(second.out)["run_id"];
  ASSERT_EQ(cli(a, R"(workflow signal --id order-d --name approve --input '"bo"')").status, 0);
  Output result = cli(a, "workflow result --id order-d --timeout 20");
  ASSERT_EQ(result.status, 0) << result.out;
  EXPECT_NE(result.out.find(R"("approved_by":"bo")"), std::string::npos) << result.out;

  Output closed = cli(a, "workflow delete --id order-d --run-id " + second_run);
  ASSERT_EQ(closed.status, 0) << closed.out;
  EXPECT_EQ(closed.out, "deleted order-d (run " + second_run + ")\n");
  EXPECT_EQ(cli(a, "workflow describe --id order-d").status, 1);
  worker.stop();
}

TEST(Cli, TheServerDeletesClosedRunsAfterItsRetention) {
  TempDir dir;
  Server server(dir.file("retention.db"), {"--retention", "1s", "--retention-sweep-interval", "100ms"});
  const std::string& a = server.address();
  ASSERT_EQ(cli(a, "workflow start --type checkout --id short-lived --task-queue shop").status, 0);
  ASSERT_EQ(cli(a, "workflow start --type checkout --id long-lived --task-queue shop").status, 0);
  ASSERT_EQ(cli(a, "workflow terminate --id short-lived --reason done").status, 0);
  Output listed;
  for (int i = 0; i < 100; ++i) {
    listed = cli(a, "workflow list");
    if (listed.out.find("short-lived") == std::string::npos) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(listed.out.find("short-lived"), std::string::npos) << "deleted a second after it closed: " << listed.out;
  EXPECT_NE(listed.out.find("long-lived"), std::string::npos) << "a running run is kept: " << listed.out;
  EXPECT_EQ(cli(a, "workflow describe --id short-lived").status, 1);

  const std::string help = run_command(binary("REPRISE_SERVER", "reprise-server") + " --help").out;
  EXPECT_NE(help.find("--retention DURATION"), std::string::npos) << help;
  EXPECT_NE(cli(a, "workflow --help").out.find("delete"), std::string::npos);
}

TEST(Cli, BadCommandLinesAreNamedAndExitWithTwo) {
  Output bad_json = cli("127.0.0.1:1", "workflow start --type t --id x --task-queue q --input '{oops'");
  EXPECT_EQ(bad_json.status, 1);
  EXPECT_NE(bad_json.out.find("--input 1 is not valid JSON ({oops)"), std::string::npos) << bad_json.out;
  Output missing = cli("127.0.0.1:1", "workflow start --type t");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.out.find("reprise: --id is required"), std::string::npos) << missing.out;
  Output unknown = cli("127.0.0.1:1", "workflow describe --id x --colour blue");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.out.find("not expected"), std::string::npos) << unknown.out;
  EXPECT_NE(unknown.out.find("--colour"), std::string::npos) << unknown.out;
  // Numbers are whole and in range, or named with what was given.
  Output limit = cli("127.0.0.1:1", "workflow list --limit abc");
  EXPECT_EQ(limit.status, 2);
  EXPECT_NE(limit.out.find("reprise: --limit: 'abc' is not a whole number 1 or more"), std::string::npos) << limit.out;
  Output timeout = cli("127.0.0.1:1", "workflow start --type t --id x --task-queue q --execution-timeout 1e99");
  EXPECT_EQ(timeout.status, 2);
  EXPECT_NE(timeout.out.find("--execution-timeout: '1e99' is not a duration"), std::string::npos) << timeout.out;
  Output coefficient =
      cli("127.0.0.1:1", "workflow start --type t --id x --task-queue q --retry-backoff-coefficient fast");
  EXPECT_EQ(coefficient.status, 2);
  EXPECT_NE(coefficient.out.find("--retry-backoff-coefficient: Value fast not in range"), std::string::npos)
      << coefficient.out;
  Output wait = cli("127.0.0.1:1", "workflow result --id x --timeout 5x");
  EXPECT_EQ(wait.status, 2);
  EXPECT_NE(wait.out.find("--timeout: '5x' is not a duration"), std::string::npos) << wait.out;
  Output nowhere = cli("127.0.0.1:1", "workflow describe --id x");
  EXPECT_EQ(nowhere.status, 1);
  EXPECT_NE(nowhere.out.find("DescribeWorkflow"), std::string::npos) << nowhere.out;
}

}  // namespace
}  // namespace reprise
