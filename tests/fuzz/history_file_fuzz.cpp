// History file import: what `reprise history export` writes and the replay
// tester reads back (a file from another machine, a bug report, an old
// release). The file is read (JSON or binary), shown one event per line as
// `reprise workflow show` does, and replayed against a workflow that uses
// every kind of command, so the worker's state machines meet events in
// orders and shapes the engine never writes. Replay must succeed or throw
// reprise::Error naming the problem.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "reprise/testing.hpp"
#include "reprise/workflow.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/quiet_protobuf.hpp"
#include "tools/cli/event_line.hpp"

namespace {

using namespace std::chrono_literals;
using namespace reprise;

std::string charge(ActivityContext&, std::string order) { return "charged " + order; }
inline constexpr Activity<&charge> charge_act{"charge"};

Workflow<std::string> ship(WorkflowContext&, std::string receipt) { co_return "shipped " + receipt; }
inline constexpr WorkflowDef<&ship> ship_wf{"ship"};

inline constexpr Signal<std::string> amend{"amend"};
inline constexpr Query<std::string> stage_query{"stage"};

Workflow<std::string> order(WorkflowContext& ctx, std::string id) {
  std::string stage = "charging";
  ctx.on_query(stage_query, [&stage] { return stage; });
  auto charged = ctx.execute(charge_act, ActivityOptions::start_to_close(10min), id);
  auto deadline = ctx.sleep(1h);
  if (co_await any(charged, deadline) == 1) co_return "timed out";
  deadline.cancel();
  std::string receipt = co_await charged;
  stage = "waiting";
  std::optional<std::string> note = co_await ctx.wait(amend, 72h);
  const uint64_t token = ctx.side_effect([] { return uint64_t{7}; });
  if (ctx.patched("ship-v2")) {
    receipt = co_await ctx.execute_child(ship_wf, ChildWorkflowOptions(), receipt);
  }
  co_await ctx.signal_external("ledger", amend, receipt);
  co_await ctx.cancel_external("reminder-" + id, "shipped");
  if (note && *note == "again") co_await ctx.continue_as_new(ship_wf, receipt);
  co_return receipt + " " + std::to_string(token) + " " + note.value_or("");
}
inline constexpr WorkflowDef<&order> order_wf{"order"};

// The file each input is written to, in /dev/shm where there is one: kept
// open, and rewritten in place for every input (opening and truncating a
// file on disk per input took an eighth of the time).
struct InputFile {
  std::string path;
  int fd = -1;
};

const InputFile& input_file() {
  static const InputFile file = [] {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    InputFile made;
    made.path = std::string(dir) + "/reprise-history-fuzz-XXXXXX";
    made.fd = mkstemp(made.path.data());
    FUZZ_CHECK(made.fd >= 0, "cannot create a temporary file");
    return made;
  }();
  static const bool removed_at_exit = std::atexit([] { std::remove(file.path.c_str()); }) == 0;
  (void)removed_at_exit;
  return file;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const InputFile& file = input_file();
  const std::string& path = file.path;
  FUZZ_CHECK(ftruncate(file.fd, 0) == 0, "cannot empty %s", path.c_str());
  for (size_t written = 0; written < size;) {
    const ssize_t n = pwrite(file.fd, data + written, size - written, static_cast<off_t>(written));
    FUZZ_CHECK(n > 0, "cannot write %s", path.c_str());
    written += static_cast<size_t>(n);
  }

  v1::History history;
  try {
    history = read_history_file(path);
  } catch (const Error& e) {
    FUZZ_CHECK(std::string(e.what()).find(path) != std::string::npos, "an error that does not name the file: %s",
               e.what());
    return 0;
  }
  for (const v1::HistoryEvent& e : history.events()) (void)cli::event_line(e);
  try {
    testing::replay(history, order_wf);
  } catch (const Error&) {
    // Non-determinism or an unusable history: the answer a bad file gets.
  }
  return 0;
}
