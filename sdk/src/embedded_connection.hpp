// EmbeddedConnection: the engine in this process, on a local SQLite file.
// The same API as a remote server, with no server to run; each call waits on
// the engine's callback. Private to the SDK and its testing library (which
// reaches the engine and store to move a manual clock).
#pragma once

#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "engine/engine.hpp"
#include "engine/store/sqlite_store.hpp"
#include "reprise/client.hpp"
#include "reprise/export.hpp"
#include "sdk/src/busy_backoff.hpp"

namespace reprise {

class EmbeddedConnection final : public Connection {
 public:
  // For the testing library, which moves a manual clock.
  engine::SqliteStore& store() { return *store_; }
  engine::Engine& engine() { return *engine_; }

  // What TestEnvironment asks of the engine. libreprise-embedded hides the
  // engine, so libreprise-testing reaches it only through these.
  // Fires the timers due by the engine's clock.
  REPRISE_EXPORT void fire_due_timers();
  // Whether a task waits for a worker: queued in memory or stored (also
  // true when the store cannot say).
  REPRISE_EXPORT bool has_pending_tasks();
  // When the earliest timer is due, if one is set and the store can say.
  REPRISE_EXPORT std::optional<TimePoint> next_timer_time();

  EmbeddedConnection(std::unique_ptr<engine::SqliteStore> store, std::unique_ptr<engine::Engine> engine)
      : store_(std::move(store)), engine_(std::move(engine)) {}
  ~EmbeddedConnection() override {
    engine_.reset();  // answers parked polls, finishes what is in flight
    store_.reset();   // then the database closes
  }

  v1::StartWorkflowResponse start_workflow(const v1::StartWorkflowRequest& r) override {
    return call("StartWorkflow", &engine::Engine::start_workflow, r);
  }
  void signal_workflow(const v1::SignalWorkflowRequest& r) override {
    call("SignalWorkflow", &engine::Engine::signal_workflow, r);
  }
  v1::QueryWorkflowResponse query_workflow(const v1::QueryWorkflowRequest& r) override {
    return call("QueryWorkflow", &engine::Engine::query_workflow, r);
  }
  void request_cancel_workflow(const v1::RequestCancelWorkflowRequest& r) override {
    call("RequestCancelWorkflow", &engine::Engine::request_cancel_workflow, r);
  }
  void terminate_workflow(const v1::TerminateWorkflowRequest& r) override {
    call("TerminateWorkflow", &engine::Engine::terminate_workflow, r);
  }
  v1::DeleteWorkflowExecutionResponse delete_workflow(const v1::DeleteWorkflowExecutionRequest& r) override {
    return call("DeleteWorkflowExecution", &engine::Engine::delete_workflow_execution, r);
  }
  v1::DescribeWorkflowResponse describe_workflow(const v1::DescribeWorkflowRequest& r) override {
    return call("DescribeWorkflow", &engine::Engine::describe_workflow, r);
  }
  v1::ListWorkflowsResponse list_workflows(const v1::ListWorkflowsRequest& r) override {
    return call("ListWorkflows", &engine::Engine::list_workflows, r);
  }
  v1::GetHistoryResponse get_history(const v1::GetHistoryRequest& r, std::chrono::seconds) override {
    return wait<v1::GetHistoryResponse>("GetHistory", [&](auto reply) { engine_->get_history(r, std::move(reply)); });
  }
  v1::PollWorkflowTaskResponse poll_workflow_task(const v1::PollWorkflowTaskRequest& r) override {
    PollInFlight poll(*this);
    return wait<v1::PollWorkflowTaskResponse>(
        "PollWorkflowTask", [&](auto reply) { engine_->poll_workflow_task(r, std::move(reply), poll.ticket); });
  }
  v1::CompleteWorkflowTaskResponse complete_workflow_task(const v1::CompleteWorkflowTaskRequest& r) override {
    return call("CompleteWorkflowTask", &engine::Engine::complete_workflow_task, r);
  }
  void fail_workflow_task(const v1::FailWorkflowTaskRequest& r) override {
    call("FailWorkflowTask", &engine::Engine::fail_workflow_task, r);
  }
  v1::PollActivityTaskResponse poll_activity_task(const v1::PollActivityTaskRequest& r) override {
    PollInFlight poll(*this);
    return wait<v1::PollActivityTaskResponse>(
        "PollActivityTask", [&](auto reply) { engine_->poll_activity_task(r, std::move(reply), poll.ticket); });
  }
  void cancel_polls() override {
    std::lock_guard lock(polls_mu_);
    for (const auto& ticket : polls_) ticket->cancel();
  }
  bool heartbeat_activity(const v1::HeartbeatActivityRequest& r) override {
    return call("HeartbeatActivity", &engine::Engine::heartbeat_activity, r).cancel_requested();
  }
  void complete_activity(const v1::CompleteActivityRequest& r) override {
    call("CompleteActivity", &engine::Engine::complete_activity, r);
  }
  void fail_activity(const v1::FailActivityRequest& r) override {
    call("FailActivity", &engine::Engine::fail_activity, r);
  }
  v1::CompleteActivityResponse complete_activity_answered(const v1::CompleteActivityRequest& r) override {
    return call("CompleteActivity", &engine::Engine::complete_activity, r);
  }
  v1::FailActivityResponse fail_activity_answered(const v1::FailActivityRequest& r) override {
    return call("FailActivity", &engine::Engine::fail_activity, r);
  }
  v1::PutPayloadResponse put_payload(std::string_view bytes) override {
    Result<engine::BlobInfo> stored = store_->blobs().put(bytes, "default");
    if (!stored) throw RpcError(static_cast<int>(stored.status().code()), "PutPayload: " + stored.status().message());
    v1::PutPayloadResponse out;
    out.set_sha256(std::string(history::as_bytes(stored->sha256)));
    out.set_size(stored->size);
    return out;
  }
  std::string get_payload(const std::string& sha256) override {
    history::Sha256Digest digest{};
    if (!history::digest_from_bytes(sha256, digest)) {
      throw RpcError(static_cast<int>(StatusCode::kInvalidArgument), "GetPayload: sha256 must be 32 bytes");
    }
    Result<std::string> bytes = store_->blobs().get(digest, "default", std::numeric_limits<int64_t>::max());
    if (!bytes) throw RpcError(static_cast<int>(bytes.status().code()), "GetPayload: " + bytes.status().message());
    return std::move(bytes).value();
  }
  void report_activity_canceled(const v1::ReportActivityCanceledRequest& r) override {
    call("ReportActivityCanceled", &engine::Engine::report_activity_canceled, r);
  }

 private:
  // A poll's ticket, known to cancel_polls() while the poll is in flight.
  struct PollInFlight {
    EmbeddedConnection& connection;
    std::shared_ptr<engine::PollTicket> ticket = std::make_shared<engine::PollTicket>();
    explicit PollInFlight(EmbeddedConnection& c) : connection(c) {
      std::lock_guard lock(connection.polls_mu_);
      connection.polls_.insert(ticket);
    }
    ~PollInFlight() {
      std::lock_guard lock(connection.polls_mu_);
      connection.polls_.erase(ticket);
    }
  };

  template <typename Resp, typename Start>
  static Result<Resp> answer_of(Start start) {
    std::promise<Result<Resp>> done;
    start([&done](Result<Resp> r) { done.set_value(std::move(r)); });
    return done.get_future().get();
  }
  template <typename Resp>
  static Resp value_or_throw(const char* what, Result<Resp> r) {
    if (!r) throw RpcError(static_cast<int>(r.status().code()), std::string(what) + ": " + r.status().message());
    return std::move(r).value();
  }
  template <typename Resp, typename Start>
  Resp wait(const char* what, Start start) {
    return value_or_throw(what, answer_of<Resp>(start));
  }
  // A call the engine refuses as busy is made again, unchanged, for up to
  // 30 s (a remote call's timeout).
  template <typename Req, typename Resp>
  Resp call(const char* what, void (engine::Engine::*method)(Req, engine::Reply<Resp>), const Req& r) {
    detail::BusyBackoff backoff(std::chrono::steady_clock::now() + std::chrono::seconds(30));
    while (true) {
      Result<Resp> result =
          answer_of<Resp>([&](engine::Reply<Resp> reply) { (engine_.get()->*method)(r, std::move(reply)); });
      if (result.is_ok() || !result.status().retryable() || !backoff.wait()) {
        return value_or_throw(what, std::move(result));
      }
    }
  }

  std::unique_ptr<engine::SqliteStore> store_;
  std::unique_ptr<engine::Engine> engine_;
  std::mutex polls_mu_;
  std::set<std::shared_ptr<engine::PollTicket>> polls_;  // in flight, for cancel_polls()
};

// Opens (creating if missing) the database and starts the engine on it,
// reading time from `clock` (null: the system clock). Throws reprise::Error
// naming the file when it cannot.
REPRISE_EXPORT std::shared_ptr<EmbeddedConnection> open_embedded(const std::string& database_path, const Clock* clock);

}  // namespace reprise
