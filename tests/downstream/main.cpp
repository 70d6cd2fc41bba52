// A project outside the Reprise tree, built against an installed Reprise
// (once with meson and pkg-config, once with CMake; tests/downstream/run.sh):
// one workflow and one activity, run in a TestEnvironment (whose clock skips
// the workflow's day of sleep) and on the embedded engine. Exits 0 when both
// give the expected result.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <reprise/activity.hpp>
#include <reprise/client.hpp>
#include <reprise/testing.hpp>
#include <reprise/worker.hpp>
#include <reprise/workflow.hpp>
#include <string>

using namespace std::chrono_literals;

std::string greet(reprise::ActivityContext&, std::string name) { return "Hello, " + name + "!"; }
constexpr reprise::Activity<&greet> greet_activity{"greet"};

// Waits `wait_hours` of workflow time, then greets.
reprise::Workflow<std::string> greeting(reprise::WorkflowContext& ctx, std::string name, int wait_hours) {
  if (wait_hours > 0) co_await ctx.sleep(std::chrono::hours(wait_hours));
  co_return co_await ctx.execute(greet_activity, reprise::ActivityOptions::start_to_close(10s), name);
}
constexpr reprise::WorkflowDef<&greeting> greeting_wf{"greeting"};

std::string run_greeting(std::shared_ptr<reprise::Connection> connection, const std::string& name, int wait_hours) {
  reprise::Worker worker(connection, {.task_queue = "downstream", .workflow_threads = 1, .activity_threads = 1});
  worker.register_workflow(greeting_wf);
  worker.register_activity(greet_activity);
  worker.start();
  reprise::Client client(connection);
  std::string result =
      client.execute(greeting_wf, {.id = "greeting-" + name, .task_queue = "downstream"}, name, wait_hours);
  worker.stop();
  return result;
}

bool expect(const char* what, bool ok) {
  std::printf("%s: %s\n", what, ok ? "ok" : "FAILED");
  return ok;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <scratch directory>\n", argv[0]);
    return 2;
  }
  try {
    bool ok = true;
    {
      // The day of sleep passes at once: the environment's clock skips it.
      reprise::testing::TestEnvironment env;
      const reprise::TimePoint before = env.now();
      ok &= expect("TestEnvironment", run_greeting(env.connection(), "test", 24) == "Hello, test!");
      ok &= expect("TestEnvironment skipped a day", env.now() - before >= 24h);
    }
    {
      const std::string db = (std::filesystem::path(argv[1]) / "embedded.db").string();
      ok &= expect("embedded engine",
                   run_greeting(reprise::Connection::embedded(db), "embedded", 0) == "Hello, embedded!");
    }
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "failed: %s\n", e.what());
    return 1;
  }
}
