// reprise-store-tour: walks three workflows through the durable store the way
// the engine will — start, workflow tasks, an activity, a claim-checked 5 MB
// result, a timer — then reads everything back from the SQLite file and
// prints it. It is the demo until the server and SDK exist.
//
//   reprise-store-tour [DB]     (default ./reprise-tour.db, recreated)
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include "engine/store/sqlite_store.hpp"
#include "history/batch_codec.hpp"
#include "history/enum_name.hpp"
#include "history/event_builder.hpp"
#include "history/history_size.hpp"
#include "history/payload.hpp"

using namespace reprise;
using namespace reprise::engine;
namespace v1 = reprise::v1;

namespace {

[[noreturn]] void die(const Status& s) {
  std::fprintf(stderr, "reprise-store-tour: %s\n", s.to_string().c_str());
  std::exit(1);
}

template <typename T>
T check(Result<T> r) {
  if (!r) die(r.status());
  return std::move(r).value();
}

// One workflow run as the engine would drive it: each step appends events and
// commits them with the run's new state in one transition.
class Run {
 public:
  Run(SqliteStore& store, const Clock& clock, std::string workflow_id, std::string type)
      : store_(store), clock_(clock), key_{"default", std::move(workflow_id), "run-1"}, type_(std::move(type)) {}

  // Appends the events `add` builds, plus whatever else `extra` puts in the
  // transition, and commits.
  void step(const std::string& what, const std::function<void(history::HistoryBuilder&)>& add,
            const std::function<void(Transition&)>& extra = {}) {
    history::HistoryBuilder b(next_event_id_, clock_.now());
    add(b);
    Transition t;
    ExecutionWrite w;
    w.key = key_;
    w.expected_version = version_;
    w.status = status_;
    w.state = "step: " + what;  // the engine will keep its state machine here
    const auto& events = b.events();
    w.events = HistoryBatch{next_event_id_, b.next_event_id() - 1, check(codec_.encode(events))};
    size_.add(events);
    stored_bytes_ += static_cast<int64_t>(w.events->data.size());
    t.executions.push_back(std::move(w));
    t.visibility.push_back({key_, type_, "tour", status_, start_, closed_});
    if (version_ == 0) {
      t.current_runs.push_back({{key_.namespace_id, key_.workflow_id, key_.run_id, status_, "tour"}, ""});
    }
    if (extra) extra(t);
    const CommitResult r = check(store_.commit(std::move(t)));
    std::printf("  %-9s v%lld  %-48s events %lld..%lld\n", key_.workflow_id.c_str(),
                static_cast<long long>(r.versions[0]), what.c_str(), static_cast<long long>(next_event_id_),
                static_cast<long long>(b.next_event_id() - 1));
    version_ = r.versions[0];
    next_event_id_ = b.next_event_id();
  }

  void close() {
    status_ = v1::WORKFLOW_EXECUTION_STATUS_COMPLETED;
    closed_ = clock_.now();
  }
  const ExecutionKey& key() const { return key_; }
  const history::HistorySize& size() const { return size_; }
  int64_t stored_bytes() const { return stored_bytes_; }

 private:
  SqliteStore& store_;
  const Clock& clock_;
  ExecutionKey key_;
  std::string type_;
  history::EventBatchCodec codec_;
  int64_t version_ = 0;
  int64_t next_event_id_ = 1;
  v1::WorkflowExecutionStatus status_ = v1::WORKFLOW_EXECUTION_STATUS_RUNNING;
  TimePoint start_ = clock_.now();
  std::optional<TimePoint> closed_;
  history::HistorySize size_;
  int64_t stored_bytes_ = 0;
};

void started(history::HistoryBuilder& b, const std::string& type, std::string input) {
  auto* s = b.add(&v1::HistoryEvent::mutable_workflow_execution_started);
  s->mutable_workflow_type()->set_name(type);
  s->mutable_task_queue()->set_name("tour");
  *s->mutable_input()->add_payloads() = history::make_payload(history::kEncodingJson, std::move(input));
  b.add(&v1::HistoryEvent::mutable_workflow_task_scheduled)->mutable_task_queue()->set_name("tour");
}

void task_done(history::HistoryBuilder& b) {
  b.add(&v1::HistoryEvent::mutable_workflow_task_started)->set_scheduled_event_id(b.next_event_id() - 2);
  b.add(&v1::HistoryEvent::mutable_workflow_task_completed)->set_started_event_id(b.next_event_id() - 2);
}

void schedule_activity(history::HistoryBuilder& b, const std::string& name) {
  auto* a = b.add(&v1::HistoryEvent::mutable_activity_task_scheduled);
  a->set_activity_id("1");
  a->mutable_activity_type()->set_name(name);
  a->mutable_start_to_close_timeout()->set_seconds(30);
}

void print_history(SqliteStore& store, const ExecutionKey& key) {
  history::EventBatchCodec codec;
  v1::History h;
  for (const auto& batch : check(store.read_history(key, 1, 1000))) {
    if (Status s = codec.decode(batch.data, h); !s) die(s);
  }
  std::printf("\n%s — history read back from the file:\n", key.workflow_id.c_str());
  for (const auto& e : h.events()) {
    std::string detail;
    if (e.has_workflow_execution_started()) detail = e.workflow_execution_started().workflow_type().name();
    if (e.has_activity_task_scheduled()) detail = e.activity_task_scheduled().activity_type().name();
    if (e.has_activity_task_completed()) detail = history::summarize(e.activity_task_completed().result().payloads(0));
    if (e.has_timer_started()) {
      detail = e.timer_started().timer_id() + " fires in " +
               std::to_string(e.timer_started().start_to_fire_timeout().seconds()) + "s";
    }
    if (e.has_workflow_execution_completed()) {
      detail = history::summarize(e.workflow_execution_completed().result().payloads(0));
    }
    std::printf("  %3lld  %-28s %s\n", static_cast<long long>(e.event_id()),
                history::event_type_name(e.event_type()).c_str(), detail.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "reprise-tour.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  const Clock& clock = SystemClock::instance();
  auto store = check(SqliteStore::open(path));
  std::printf("Opened %s (SQLite, WAL, fsync on every commit).\n\nTransitions, each one atomic commit:\n",
              path.c_str());

  Run hello(*store, clock, "hello-1", "hello");
  hello.step("start: WorkflowExecutionStarted", [](auto& b) { started(b, "hello", "\"world\""); });
  hello.step("workflow task: schedule activity 'greet'", [](auto& b) {
    task_done(b);
    schedule_activity(b, "greet");
  });
  hello.step("activity 'greet' completed", [](auto& b) {
    b.add(&v1::HistoryEvent::mutable_activity_task_started)->set_attempt(1);
    *b.add(&v1::HistoryEvent::mutable_activity_task_completed)->mutable_result()->add_payloads() =
        history::make_payload(history::kEncodingJson, "\"Hello, world!\"");
    b.add(&v1::HistoryEvent::mutable_workflow_task_scheduled);
  });
  hello.close();
  hello.step("workflow task: complete the workflow", [](auto& b) {
    task_done(b);
    *b.add(&v1::HistoryEvent::mutable_workflow_execution_completed)->mutable_result()->add_payloads() =
        history::make_payload(history::kEncodingJson, "\"Hello, world!\"");
  });

  // A 5 MB activity result goes to the blob store; history keeps a reference.
  Run report(*store, clock, "report-1", "report");
  report.step("start", [](auto& b) { started(b, "report", "{\"month\":\"2026-11\"}"); });
  report.step("workflow task: schedule activity 'build_report'", [](auto& b) {
    task_done(b);
    schedule_activity(b, "build_report");
  });
  std::string big;
  for (int64_t i = 0; big.size() < 5'000'000; ++i) big += "row " + std::to_string(i * 7919 % 100003) + ",";
  v1::Payload result = history::make_payload(history::kEncodingJson, big);
  const std::string blob_bytes = history::make_claim_check(result);
  const BlobInfo blob = check(store->blobs().put(blob_bytes, "default"));
  report.step(
      "activity completed: 5 MB result by claim-check",
      [&](auto& b) {
        b.add(&v1::HistoryEvent::mutable_activity_task_started)->set_attempt(1);
        *b.add(&v1::HistoryEvent::mutable_activity_task_completed)->mutable_result()->add_payloads() = result;
        b.add(&v1::HistoryEvent::mutable_workflow_task_scheduled);
      },
      [&](Transition& t) {
        t.add_blob_refs.push_back({blob.sha256, report.key()});
      });

  // A workflow parked on a 24h timer: the timer is a durable row.
  Run sleeper(*store, clock, "sleeper-1", "reminder");
  sleeper.step("start", [](auto& b) { started(b, "reminder", "{}"); });
  sleeper.step(
      "workflow task: start a 24h timer",
      [](auto& b) {
        task_done(b);
        auto* timer = b.add(&v1::HistoryEvent::mutable_timer_started);
        timer->set_timer_id("remind");
        timer->mutable_start_to_fire_timeout()->set_seconds(24 * 3600);
      },
      [&](Transition& t) {
        t.add_timers.push_back({0, clock.now() + std::chrono::hours(24), sleeper.key(), "remind"});
      });

  print_history(*store, hello.key());
  print_history(*store, report.key());
  print_history(*store, sleeper.key());

  std::printf("\nSizes:\n");
  for (const Run* r : {&hello, &report, &sleeper}) {
    std::printf("  %-9s %2lld events, %6lld bytes of history, %6lld bytes stored\n", r->key().workflow_id.c_str(),
                static_cast<long long>(r->size().events), static_cast<long long>(r->size().bytes),
                static_cast<long long>(r->stored_bytes()));
  }
  std::printf("  blob %s…: %lld bytes in the blob store, referenced by report-1\n",
              history::to_hex(blob.sha256).substr(0, 16).c_str(), static_cast<long long>(blob.size));

  VisibilityQuery q;
  q.namespace_id = "default";
  std::printf("\nWorkflows (visibility):\n");
  for (const auto& v : check(store->list_executions(q)).records) {
    std::printf("  %-9s %-9s %s\n", v.key.workflow_id.c_str(), v.workflow_type.c_str(), enum_name(v.status).c_str());
  }
  const auto next = check(store->next_timer_time());
  std::printf("\nNext durable timer fires in %lld s. Writer: %lld transitions in %lld commits.\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(*next - clock.now()).count()),
              static_cast<long long>(store->writer_stats().transitions),
              static_cast<long long>(store->writer_stats().batches));
  return 0;
}
