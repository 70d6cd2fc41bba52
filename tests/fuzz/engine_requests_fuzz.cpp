// The engine's request handlers, driven in process the way the gRPC service
// and the embedded connection drive them, with requests no SDK would send.
//
// libprotobuf-mutator is not packaged for Debian 12, so the structure is
// kept here by hand: the input is a sequence of records
//   [kind] [fixups] [length, 2 bytes little-endian] [serialized request]
// and each record's bytes are parsed as the protobuf request its kind names
// (bytes that do not parse give the empty request: it is still sent). The
// fuzzer mutates request bytes, kinds and order; the fixup bits then point
// ids, run ids, task tokens and task queues anywhere in the request
// (commands included) at workflows, runs and tasks this input has already
// made, so mutated requests reach real executions instead of NOT_FOUND.
//
// Every input gets a fresh engine and runtime on a store whose database holds
// exactly what an empty database holds (FuzzStore below), so a finding
// replays alone. The engine runs on a StepRuntime (step_runtime.hpp): its
// jobs, its writer's commits and its deadlines all run on this thread, in
// the order they came, so an input runs the same way every time. Every
// call must answer exactly once, before the engine runs out of work and
// kAnswerTime of virtual time has passed, and the engine must shut down
// afterwards.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "engine/store/sqlite_store.hpp"
#include "reprise/clock.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/quiet_protobuf.hpp"
#include "tests/fuzz/step_runtime.hpp"

namespace {

using namespace std::chrono_literals;
using namespace reprise;
using namespace reprise::engine;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

constexpr auto kAnswerTime = 20s;  // virtual time: what a parked call may wait
// Jobs, commits and deadlines one call may take before it counts as never
// answering (a loop that keeps the engine busy).
constexpr int64_t kAnswerSteps = 1'000'000;
constexpr auto kQueryTimeout = 20ms;  // no worker answers queries here
// How long the harness's thread sleeps, while a blocking call runs, when it
// has nothing to run: a batch queued for the writer does not wake it.
constexpr auto kIdleWait = std::chrono::microseconds(200);

enum Fixup : uint8_t {
  kKnownWorkflowId = 1 << 0,
  kKnownRunId = 1 << 1,
  kKnownTaskToken = 1 << 2,
  kKnownTaskQueue = 1 << 3,
  // The high four bits choose which known id, run or token.
};

// What this input's earlier answers have handed out.
struct Known {
  std::vector<std::string> workflow_ids{"wf-0", "wf-1"};
  std::vector<std::string> run_ids;
  std::vector<std::string> workflow_tokens;
  std::vector<std::string> activity_tokens;
};

const std::string& pick(const std::vector<std::string>& from, uint8_t fixups) {
  return from[(fixups >> 4) % from.size()];
}

// Points the request's ids, tokens and queues, at any depth, at what this
// input knows, as `fixups` asks.
void fix_up(Message& message, uint8_t fixups, const Known& known, const std::vector<std::string>& tokens) {
  const auto* descriptor = message.GetDescriptor();
  const auto* reflection = message.GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    if (field->type() == FieldDescriptor::TYPE_MESSAGE) {
      if (field->is_map()) continue;
      if (field->is_repeated()) {
        for (int j = 0; j < reflection->FieldSize(message, field); ++j) {
          fix_up(*reflection->MutableRepeatedMessage(&message, field, j), fixups, known, tokens);
        }
      } else if (reflection->HasField(message, field) ||
                 (field->message_type()->name() == "TaskQueue" && (fixups & kKnownTaskQueue))) {
        fix_up(*reflection->MutableMessage(&message, field), fixups, known, tokens);
      }
      continue;
    }
    if (field->is_repeated() || field->cpp_type() != FieldDescriptor::CPPTYPE_STRING) continue;
    const std::string& name = field->name();
    if (name == "workflow_id" && (fixups & kKnownWorkflowId)) {
      reflection->SetString(&message, field, pick(known.workflow_ids, fixups));
    } else if (name == "run_id" && (fixups & kKnownRunId) && !known.run_ids.empty()) {
      reflection->SetString(&message, field, pick(known.run_ids, fixups));
    } else if (name == "task_token" && (fixups & kKnownTaskToken) && !tokens.empty()) {
      reflection->SetString(&message, field, pick(tokens, fixups));
    } else if (name == "name" && descriptor->name() == "TaskQueue" && (fixups & kKnownTaskQueue)) {
      reflection->SetString(&message, field, "q");
    }
  }
}

StoreOptions fuzz_store_options() {
  StoreOptions options;
  options.durability = Durability::kNormal;  // what is fuzzed is not durability
  options.read_connections = 1;              // one thread reads
  options.writer_thread = false;             // the StepRuntime commits
  options.quick_check = false;               // the file is a fresh copy
  return options;
}

// The store every input's engine runs on, opened once per process: opening
// one (three connections, each parsing the schema and setting its pragmas) was
// more than half of an input's CPU. Between inputs reset() puts back, table by
// table, the rows of the empty database the store was opened on (`pristine`,
// attached read-only to a connection of the harness's own), and the store's
// clock at its start, so each input starts from what a freshly opened store
// on a fresh copy would hold. What stays from earlier inputs is outside the
// database and the engine: the store's prepared statements and page caches,
// its statistics, and when its WAL is next checkpointed.
class FuzzStore {
 public:
  FuzzStore(const std::filesystem::path& dir, const std::filesystem::path& empty_database) : db_(dir / "engine.db") {
    std::filesystem::copy_file(empty_database, db_, std::filesystem::copy_options::overwrite_existing);
    StoreOptions store_options = fuzz_store_options();
    store_options.clock = &clock_;
    auto store = SqliteStore::open(db_, store_options);
    FUZZ_CHECK(store.is_ok(), "cannot open the store: %s", store.status().to_string().c_str());
    store_ = std::move(store).value();

    FUZZ_CHECK(sqlite3_open_v2(db_.c_str(), &resetter_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, nullptr) == SQLITE_OK,
               "cannot open the database to reset it: %s", sqlite3_errmsg(resetter_));
    sqlite3_stmt* attach = prepare("ATTACH DATABASE 'file:" + empty_database.string() + "?mode=ro' AS pristine");
    FUZZ_CHECK(sqlite3_step(attach) == SQLITE_DONE, "cannot attach the empty database: %s", sqlite3_errmsg(resetter_));
    sqlite3_finalize(attach);
    begin_ = prepare("BEGIN IMMEDIATE");
    commit_ = prepare("COMMIT");
    for (const std::string& table : pristine_tables()) {
      const std::string quoted = "\"" + table + "\"";
      sqlite3_stmt* has_rows = prepare("SELECT 1 FROM pristine." + quoted + " LIMIT 1");
      const int rc = sqlite3_step(has_rows);
      FUZZ_CHECK(rc == SQLITE_ROW || rc == SQLITE_DONE, "cannot read the empty database: %s",
                 sqlite3_errmsg(resetter_));
      const bool pristine_has_rows = rc == SQLITE_ROW;
      sqlite3_finalize(has_rows);
      if (pristine_has_rows) {
        refill_.push_back(prepare("DELETE FROM main." + quoted));
        refill_.push_back(prepare("INSERT INTO main." + quoted + " SELECT * FROM pristine." + quoted));
      } else {
        empty_tables_.push_back(
            {prepare("SELECT 1 FROM main." + quoted + " LIMIT 1"), prepare("DELETE FROM main." + quoted)});
      }
    }
  }
  ~FuzzStore() {
    store_.reset();
    for (sqlite3_stmt* statement : refill_) sqlite3_finalize(statement);
    for (const EmptyTable& table : empty_tables_) {
      sqlite3_finalize(table.has_rows);
      sqlite3_finalize(table.clear);
    }
    sqlite3_finalize(begin_);
    sqlite3_finalize(commit_);
    sqlite3_close(resetter_);
  }

  SqliteStore& store() { return *store_; }
  ManualClock& clock() { return clock_; }

  // After an input's engine has shut down: nothing is left to commit, and
  // the database and the clock are as they were before the first input.
  // Tables the empty database leaves empty are cleared only when the input
  // wrote to them: clearing an empty table still rewrites its pages and its
  // indexes' into the WAL, and doing that for every table was more than half
  // of an input's CPU.
  void reset() {
    FUZZ_CHECK(!store_->commit_next_batch(), "a write was still queued after the engine shut down");
    step(begin_, SQLITE_DONE);
    for (sqlite3_stmt* statement : refill_) step(statement, SQLITE_DONE);
    for (const EmptyTable& table : empty_tables_) {
      const int rc = sqlite3_step(table.has_rows);
      FUZZ_CHECK(rc == SQLITE_ROW || rc == SQLITE_DONE, "resetting the database failed: %s (%s)",
                 sqlite3_errmsg(resetter_), sqlite3_sql(table.has_rows));
      sqlite3_reset(table.has_rows);
      if (rc == SQLITE_ROW) step(table.clear, SQLITE_DONE);
    }
    step(commit_, SQLITE_DONE);
    clock_.set(kStartTime);
  }

 private:
  static constexpr TimePoint kStartTime = TimePoint(std::chrono::seconds(1'700'000'000));

  std::vector<std::string> pristine_tables() {
    std::vector<std::string> tables;
    sqlite3_stmt* select = nullptr;
    FUZZ_CHECK(sqlite3_prepare_v2(resetter_, "SELECT name FROM pristine.sqlite_master WHERE type = 'table'", -1,
                                  &select, nullptr) == SQLITE_OK,
               "cannot list the tables: %s", sqlite3_errmsg(resetter_));
    while (sqlite3_step(select) == SQLITE_ROW) {
      tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(select, 0)));
    }
    sqlite3_finalize(select);
    FUZZ_CHECK(!tables.empty(), "the empty database has no tables");
    return tables;
  }

  void step(sqlite3_stmt* statement, int expected) {
    const int rc = sqlite3_step(statement);
    FUZZ_CHECK(rc == expected, "resetting the database failed: %s (%s)", sqlite3_errmsg(resetter_),
               sqlite3_sql(statement));
    sqlite3_reset(statement);
  }

  sqlite3_stmt* prepare(const std::string& sql) {
    sqlite3_stmt* statement = nullptr;
    FUZZ_CHECK(sqlite3_prepare_v2(resetter_, sql.c_str(), -1, &statement, nullptr) == SQLITE_OK,
               "cannot prepare %s: %s", sql.c_str(), sqlite3_errmsg(resetter_));
    return statement;
  }

  std::filesystem::path db_;
  ManualClock clock_{kStartTime};
  std::unique_ptr<SqliteStore> store_;
  sqlite3* resetter_ = nullptr;
  sqlite3_stmt* begin_ = nullptr;
  sqlite3_stmt* commit_ = nullptr;
  // The tables the empty database holds rows in: emptied and filled again
  // from it, in order, by every reset().
  std::vector<sqlite3_stmt*> refill_;
  // The others: emptied by reset() when the input left a row in them.
  struct EmptyTable {
    sqlite3_stmt* has_rows;
    sqlite3_stmt* clear;
  };
  std::vector<EmptyTable> empty_tables_;
};

// The thread an engine call that blocks (the engine's shutdown, a retention
// pass) runs on while the harness's thread steps the engine: one for the
// process, as the store is. A thread started and joined per input
// (std::async) cost more CPU under ASan than most inputs: clone, ASan's
// thread set-up, and unmapping its stack, whose TLB flush interrupts every
// CPU of the virtual machine.
class HelperThread {
 public:
  HelperThread() : thread_([this] { serve(); }) {}
  HelperThread(const HelperThread&) = delete;
  HelperThread& operator=(const HelperThread&) = delete;
  ~HelperThread() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }

  // Runs `call` on the helper thread, then `then` there (to wake the caller);
  // one call at a time. An exception `call` throws ends the process: a
  // finding.
  void start(std::function<void()> call, std::function<void()> then) {
    {
      std::lock_guard lock(mu_);
      FUZZ_CHECK(!call_ && finished_, "the helper thread is still in a call");
      call_ = std::move(call);
      then_ = std::move(then);
      finished_ = false;
    }
    changed_.notify_all();
  }
  // Whether the call start() gave has returned (what it wrote is then
  // visible to the caller).
  bool finished() {
    std::lock_guard lock(mu_);
    return finished_;
  }

 private:
  void serve() {
    std::unique_lock lock(mu_);
    while (true) {
      changed_.wait(lock, [this] { return stopping_ || call_; });
      if (!call_) return;
      auto call = std::move(call_);
      auto then = std::move(then_);
      call_ = nullptr;
      lock.unlock();
      call();
      lock.lock();
      finished_ = true;
      then();  // under the lock: the caller sees finished() only after it
    }
  }

  std::mutex mu_;
  std::condition_variable changed_;
  std::function<void()> call_;
  std::function<void()> then_;
  bool finished_ = true;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

class Harness {
 public:
  Harness(FuzzStore& store, HelperThread& helper) : store_(store), clock_(store.clock()), helper_(helper) {
    runtime_.commit_for(&store_.store());
    EngineOptions options;
    options.clock = &clock_;
    options.random_seed = 1;
    options.poll_timeout = 10ms;
    options.max_history_wait = 10ms;
    options.runtime = &runtime_.runtime();
    auto engine = Engine::start(store_.store(), options);
    FUZZ_CHECK(engine.is_ok(), "the engine does not start: %s", engine.status().to_string().c_str());
    engine_ = std::move(engine).value();
  }

  ~Harness() {
    // Shutdown must return once every call in flight has answered; it waits
    // on another thread while this one runs what the engine still posts.
    blocking("the engine's shutdown", [this] {
      engine_->shutdown();
      return 0;
    });
    engine_.reset();
    runtime_.commit_for(nullptr);
    store_.reset();
  }

  void run(uint8_t kind, uint8_t fixups, const uint8_t* bytes, size_t size);

 private:
  template <typename Req>
  Req parse(const uint8_t* bytes, size_t size, uint8_t fixups, const std::vector<std::string>& tokens) {
    Req request;
    if (!request.ParseFromArray(bytes, static_cast<int>(size))) request.Clear();
    fix_up(request, fixups, known_, tokens);
    return request;
  }

  template <typename Resp, typename Req, typename... Extra>
  Result<Resp> call(const char* what, void (Engine::*method)(Req, Reply<Resp>, Extra...), Req request) {
    struct Answer {
      int count = 0;
      std::optional<Result<Resp>> result;
    };
    auto answer = std::make_shared<Answer>();
    (engine_.get()->*method)(
        std::move(request),
        [answer, what](Result<Resp> r) {
          FUZZ_CHECK(++answer->count == 1, "%s answered twice", what);
          answer->result.emplace(std::move(r));
        },
        Extra{}...);
    // Jobs and commits first; a deadline (a parked poll's timeout) only once
    // nothing else is left, as on a real engine with idle threads.
    int64_t steps = 0;
    const auto called = runtime_.elapsed();
    while (!answer->result) {
      FUZZ_CHECK(++steps <= kAnswerSteps, "%s did not answer in %lld steps", what,
                 static_cast<long long>(kAnswerSteps));
      if (runtime_.run_one()) continue;
      FUZZ_CHECK(runtime_.fire_next_deadline(), "%s did not answer: the engine has nothing left to do", what);
      FUZZ_CHECK(runtime_.elapsed() - called <= kAnswerTime, "%s did not answer within %llds", what,
                 static_cast<long long>(std::chrono::seconds(kAnswerTime).count()));
    }
    Result<Resp> r = std::move(*answer->result);
    if (!r.is_ok()) FUZZ_CHECK(!r.status().message().empty(), "%s failed without saying why", what);
    return r;
  }

  // Runs `fn`, an engine call that blocks until the engine's work is done,
  // on the helper thread while this one runs jobs and commits; it must return
  // within kAnswerTime (real time: nothing here moves the virtual clock).
  template <typename Fn>
  std::invoke_result_t<Fn> blocking(const char* what, Fn fn) {
    std::optional<std::invoke_result_t<Fn>> returned;
    helper_.start([&] { returned.emplace(fn()); }, [this] { runtime_.wake(); });
    const auto give_up = std::chrono::steady_clock::now() + kAnswerTime;
    while (!helper_.finished()) {
      FUZZ_CHECK(std::chrono::steady_clock::now() < give_up, "%s did not return", what);
      if (!runtime_.run_one()) runtime_.wait_for_job(kIdleWait);
    }
    return std::move(*returned);
  }

  void remember_execution(const v1::WorkflowExecution& e) {
    if (!e.workflow_id().empty()) known_.workflow_ids.push_back(e.workflow_id());
    if (!e.run_id().empty()) known_.run_ids.push_back(e.run_id());
  }

  FuzzStore& store_;
  ManualClock& clock_;
  HelperThread& helper_;
  fuzz::StepRuntime runtime_;
  std::unique_ptr<Engine> engine_;
  Known known_;
};

void Harness::run(uint8_t kind, uint8_t fixups, const uint8_t* bytes, size_t size) {
  const std::vector<std::string> none;
  switch (kind % 20) {
    case 0:
      if (auto r = call("StartWorkflow", &Engine::start_workflow,
                        parse<v1::StartWorkflowRequest>(bytes, size, fixups, none))) {
        known_.run_ids.push_back(r->run_id());
      }
      break;
    case 1:
      (void)call("SignalWorkflow", &Engine::signal_workflow,
                 parse<v1::SignalWorkflowRequest>(bytes, size, fixups, none));
      break;
    case 2:
      if (auto r = call("SignalWithStart", &Engine::signal_with_start,
                        parse<v1::SignalWithStartRequest>(bytes, size, fixups, none))) {
        known_.run_ids.push_back(r->run_id());
      }
      break;
    case 3:
      (void)call("RequestCancelWorkflow", &Engine::request_cancel_workflow,
                 parse<v1::RequestCancelWorkflowRequest>(bytes, size, fixups, none));
      break;
    case 4:
      (void)call("TerminateWorkflow", &Engine::terminate_workflow,
                 parse<v1::TerminateWorkflowRequest>(bytes, size, fixups, none));
      break;
    case 5:
      (void)call("DeleteWorkflowExecution", &Engine::delete_workflow_execution,
                 parse<v1::DeleteWorkflowExecutionRequest>(bytes, size, fixups, none));
      break;
    case 6: {
      auto request = parse<v1::QueryWorkflowRequest>(bytes, size, fixups, none);
      request.mutable_timeout()->set_seconds(0);
      request.mutable_timeout()->set_nanos(std::chrono::nanoseconds(kQueryTimeout).count());
      (void)call("QueryWorkflow", &Engine::query_workflow, std::move(request));
      break;
    }
    case 7:
      (void)call("DescribeWorkflow", &Engine::describe_workflow,
                 parse<v1::DescribeWorkflowRequest>(bytes, size, fixups, none));
      break;
    case 8:
      (void)call("GetHistory", &Engine::get_history, parse<v1::GetHistoryRequest>(bytes, size, fixups, none));
      break;
    case 9:
      (void)call("ListWorkflows", &Engine::list_workflows, parse<v1::ListWorkflowsRequest>(bytes, size, fixups, none));
      break;
    case 10:
      if (auto r = call("PollWorkflowTask", &Engine::poll_workflow_task,
                        parse<v1::PollWorkflowTaskRequest>(bytes, size, fixups, none));
          r && !r->task_token().empty()) {
        known_.workflow_tokens.push_back(r->task_token());
        remember_execution(r->workflow_execution());
      }
      break;
    case 11:
      (void)call("CompleteWorkflowTask", &Engine::complete_workflow_task,
                 parse<v1::CompleteWorkflowTaskRequest>(bytes, size, fixups, known_.workflow_tokens));
      break;
    case 12:
      (void)call("FailWorkflowTask", &Engine::fail_workflow_task,
                 parse<v1::FailWorkflowTaskRequest>(bytes, size, fixups, known_.workflow_tokens));
      break;
    case 13:
      if (auto r = call("PollActivityTask", &Engine::poll_activity_task,
                        parse<v1::PollActivityTaskRequest>(bytes, size, fixups, none));
          r && !r->task_token().empty()) {
        known_.activity_tokens.push_back(r->task_token());
        remember_execution(r->workflow_execution());
      }
      break;
    case 14:
      (void)call("HeartbeatActivity", &Engine::heartbeat_activity,
                 parse<v1::HeartbeatActivityRequest>(bytes, size, fixups, known_.activity_tokens));
      break;
    case 15:
      (void)call("CompleteActivity", &Engine::complete_activity,
                 parse<v1::CompleteActivityRequest>(bytes, size, fixups, known_.activity_tokens));
      break;
    case 16:
      (void)call("FailActivity", &Engine::fail_activity,
                 parse<v1::FailActivityRequest>(bytes, size, fixups, known_.activity_tokens));
      break;
    case 17:
      (void)call("ReportActivityCanceled", &Engine::report_activity_canceled,
                 parse<v1::ReportActivityCanceledRequest>(bytes, size, fixups, known_.activity_tokens));
      break;
    case 18:
      // Time passes (1 ms to about 35 years): timers and timeouts fire.
      clock_.advance(std::chrono::milliseconds(int64_t{1} << (fixups % 41)));
      engine_->check_timers();
      break;
    case 19: {
      auto pass = blocking("a retention pass", [this] { return engine_->sweep_retention(); });
      FUZZ_CHECK(pass.is_ok() || !pass.status().message().empty(), "retention failed without saying why");
      break;
    }
  }
}

const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string name = (base / "reprise-engine-fuzz-XXXXXX").string();
    FUZZ_CHECK(mkdtemp(name.data()) != nullptr, "cannot create a scratch directory");
    return std::filesystem::path(name);
  }();
  static const bool removed_at_exit = std::atexit([] {
                                        std::error_code ignored;
                                        std::filesystem::remove_all(dir, ignored);
                                      }) == 0;
  (void)removed_at_exit;
  return dir;
}

// A database as SqliteStore::open creates it, made once per process; closing
// its only store leaves it whole in the one file.
const std::filesystem::path& empty_database() {
  static const std::filesystem::path path = [] {
    std::filesystem::path made = scratch_dir() / "empty.db";
    auto store = SqliteStore::open(made, fuzz_store_options());
    FUZZ_CHECK(store.is_ok(), "cannot create the empty database: %s", store.status().to_string().c_str());
    store->reset();
    FUZZ_CHECK(!std::filesystem::exists(made.string() + "-wal"), "the empty database left a WAL behind");
    return made;
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = (log::set_level(log::Level::kError), true);
  (void)quiet;
  static FuzzStore store(scratch_dir(), empty_database());
  static HelperThread helper;
  Harness harness(store, helper);
  size_t at = 0;
  while (at + 4 <= size) {
    const uint8_t kind = data[at];
    const uint8_t fixups = data[at + 1];
    const size_t length = std::min<size_t>(data[at + 2] | (size_t{data[at + 3]} << 8), size - at - 4);
    harness.run(kind, fixups, data + at + 4, length);
    at += 4 + length;
  }
  return 0;
}
