#include <thread>

#include "examples/examples.hpp"

namespace examples {

using namespace std::chrono_literals;

void register_all(reprise::Worker& worker) {
  worker.register_workflow(hello_wf);
  worker.register_activity(greet_activity);
  worker.register_workflow(transfer_wf);
  worker.register_activity(withdraw_activity);
  worker.register_activity(deposit_activity);
  worker.register_activity(refund_activity);
  worker.register_workflow(expense_wf);
  worker.register_workflow(count_all_wf);
  worker.register_workflow(count_part_wf);
  worker.register_activity(count_words_activity);
  worker.register_workflow(feed_loop_wf);
  worker.register_activity(poll_feed_activity);
  worker.register_workflow(report_wf);
  worker.register_activity(build_report_activity);
  worker.register_activity(publish_report_activity);
  worker.register_workflow(shipping_v2_wf);
  worker.register_activity(ship_activity);
  worker.register_activity(fraud_check_activity);
  worker.register_workflow(hello_stackful_wf);
  worker.register_workflow(transfer_stackful_wf);
  worker.register_workflow(feed_loop_stackful_wf);
}

namespace {

// Records whether each step came out as expected.
class Checker {
 public:
  explicit Checker(std::FILE* out) : out_(out) {}
  template <typename T>
  void expect(const std::string& what, const T& got, const T& want) {
    const bool good = got == want;
    ok_ = ok_ && good;
    std::fprintf(out_, "  %-4s %s\n", good ? "ok" : "FAIL", what.c_str());
  }
  void note(const std::string& line) { std::fprintf(out_, "       %s\n", line.c_str()); }
  void fail(const std::string& what) {
    ok_ = false;
    std::fprintf(out_, "  FAIL %s\n", what.c_str());
  }
  bool ok() const { return ok_; }

 private:
  std::FILE* out_;
  bool ok_ = true;
};

}  // namespace

bool run_all(reprise::Client& client, const std::string& queue, const std::string& prefix, std::FILE* out,
             int64_t report_megabytes) {
  Checker check(out);
  auto id = [&](const std::string& name) { return prefix + name; };
  try {
    std::fprintf(out, "hello\n");
    const std::string greeting =
        client.execute(hello_wf, {.id = id("hello"), .task_queue = queue}, std::string("world"));
    check.expect("hello -> \"" + greeting + "\"", greeting, std::string("Hello, world!"));

    std::fprintf(out, "money transfer saga\n");
    const std::string moved =
        client.execute(transfer_wf, {.id = id("transfer-ok"), .task_queue = queue}, Transfer{"alice", "bob", 2500});
    check.expect("alice -> bob: " + moved, moved, std::string("withdrew 2500 from alice, deposited 2500 to bob"));
    try {
      client.execute(transfer_wf, {.id = id("transfer-closed"), .task_queue = queue},
                     Transfer{"alice", "closed-carol", 900});
      check.fail("a transfer to a closed account succeeded");
    } catch (const reprise::WorkflowFailedError& e) {
      check.expect("alice -> closed-carol compensated: " + std::string(e.what()), e.type(),
                   std::string("TransferFailed"));
    }

    std::fprintf(out, "the stackful style: hello, the saga and the loop as plain functions\n");
    const std::string stackful_greeting =
        client.execute(hello_stackful_wf, {.id = id("hello-stackful"), .task_queue = queue}, std::string("fibers"));
    check.expect("hello_stackful -> \"" + stackful_greeting + "\"", stackful_greeting, std::string("Hello, fibers!"));
    const std::string stackful_moved = client.execute(
        transfer_stackful_wf, {.id = id("transfer-stackful-ok"), .task_queue = queue}, Transfer{"dave", "erin", 700});
    check.expect("dave -> erin: " + stackful_moved, stackful_moved,
                 std::string("withdrew 700 from dave, deposited 700 to erin"));
    try {
      client.execute(transfer_stackful_wf, {.id = id("transfer-stackful-closed"), .task_queue = queue},
                     Transfer{"dave", "closed-frank", 300});
      check.fail("a stackful transfer to a closed account succeeded");
    } catch (const reprise::WorkflowFailedError& e) {
      check.expect("dave -> closed-frank compensated: " + std::string(e.what()), e.type(),
                   std::string("TransferFailed"));
    }
    const Tally stackful_tally = client.execute(feed_loop_stackful_wf, {.id = id("loop-stackful"), .task_queue = queue},
                                                Tally{}, int64_t{12}, int64_t{5});
    check.expect("feed_loop_stackful: 12 rounds over " + std::to_string(stackful_tally.runs) + " runs",
                 stackful_tally.rounds * 10 + stackful_tally.runs, int64_t{123});

    std::fprintf(out, "human approval\n");
    auto approval = client.start(expense_wf, {.id = id("expense"), .task_queue = queue}, std::string("laptop"),
                                 int64_t{48 * 3600 * 1000});
    std::string status;
    for (int i = 0; i < 200; ++i) {
      try {
        status = client.query(id("expense"), expense_status);
        break;
      } catch (const reprise::RpcError&) {
        std::this_thread::sleep_for(20ms);  // the first task has not run yet
      }
    }
    check.expect("query while waiting: " + status, status, std::string("waiting for a decision on laptop"));
    client.signal(id("expense"), decide, Decision{"dana", true});
    const std::string decided = approval.result(30s);
    check.expect("after the signal: " + decided, decided, std::string("laptop: approved by dana"));
    const std::string expired =
        client.execute(expense_wf, {.id = id("expense-late"), .task_queue = queue}, std::string("chair"), int64_t{300});
    check.expect("no decision in time: " + expired, expired, std::string("chair: expired"));

    std::fprintf(out, "fan-out/fan-in with child workflows\n");
    const int64_t words = client.execute(count_all_wf, {.id = id("words"), .task_queue = queue},
                                         std::vector<std::string>{"the quick brown fox", "jumps over", "the lazy dog"});
    check.expect("3 children counted " + std::to_string(words) + " words", words, int64_t{9});

    std::fprintf(out, "long-running loop with continue-as-new\n");
    const Tally tally =
        client.execute(feed_loop_wf, {.id = id("feed"), .task_queue = queue}, Tally{}, int64_t{12}, int64_t{5});
    check.expect("12 rounds in " + std::to_string(tally.runs) + " runs", tally.rounds * 100 + tally.runs,
                 int64_t{12 * 100 + 3});

    std::fprintf(out, "report pipeline (a %lld MB payload by claim-check)\n", static_cast<long long>(report_megabytes));
    auto report = client.start(report_wf, {.id = id("report"), .task_queue = queue}, report_megabytes);
    const int64_t bytes = report.result(2min);
    const int64_t history = report.describe().info().history_size_bytes();
    check.expect("published " + std::to_string(bytes >> 20) + " MiB; history " + std::to_string(history) + " bytes",
                 bytes >= (report_megabytes << 20) && history < 16 * 1024, true);

    std::fprintf(out, "versioning with patched()\n");
    const std::string shipped =
        client.execute(shipping_v2_wf, {.id = id("ship"), .task_queue = queue}, std::string("order-9"));
    check.expect("new execution takes the patch: " + shipped, shipped,
                 std::string("order-9 looks fine, shipped order-9"));
  } catch (const std::exception& e) {
    check.fail(std::string("unexpected error: ") + e.what());
  }
  return check.ok();
}

}  // namespace examples
