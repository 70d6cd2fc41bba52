// Talking to reprise-server: a Connection, and a Client that starts,
// signals and awaits workflows through typed handles.
//
//   auto connection = reprise::Connection::remote("127.0.0.1:7233");
//   reprise::Client client(connection);
//   auto run = client.start(checkout_wf, {.id = "order-7", .task_queue = "orders"}, order);
//   std::string receipt = run.result();  // waits; throws WorkflowFailedError
//
// Thread safety: a Connection and a Client may be shared by threads.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "reprise/codec.hpp"
#include "reprise/connection_options.hpp"
#include "reprise/detail/blobs.hpp"
#include "reprise/export.hpp"
#include "reprise/history_file.hpp"
#include "reprise/tls.hpp"
#include "reprise/v1/service.pb.h"
#include "reprise/workflow.hpp"

namespace reprise {

// A failed RPC: what was asked, and the server's answer.
class REPRISE_EXPORT RpcError : public Error {
 public:
  RpcError(int code, const std::string& message) : Error(message), code_(code) {}
  int code() const { return code_; }  // a gRPC status code

 private:
  int code_;
};

// The workflow closed without a result: failed, canceled, terminated or
// timed out. `type()` is the failure's type when it failed with one.
class REPRISE_EXPORT WorkflowFailedError : public Error {
 public:
  WorkflowFailedError(const std::string& message, std::string type) : Error(message), type_(std::move(type)) {}
  const std::string& type() const { return type_; }

 private:
  std::string type_;
};

class REPRISE_EXPORT Connection {
 public:
  // Connects lazily; calls fail with RpcError while the server is away.
  //
  // `address` is one gRPC target ("host:7233", "unix:/path"), or the nodes
  // of a cluster as HOST:PORT entries separated by commas
  // ("a:7233,b:7233,[::1]:7233"; docs/cluster.md). With several, calls go
  // to one node (the first, to begin with) while it answers. A call the
  // server refuses for now — busy, or its workflow's shard moving between
  // nodes (a node joined or left) — is sent again unchanged after a pause
  // (20 ms, doubling to 1 s) until its timeout, with one address or several.
  // With several, a call a node answers UNAVAILABLE otherwise (unreachable
  // within 2 s, dead, shutting down) is sent again to the next address, and
  // later calls stay there. A call fails only when no address was
  // reachable in a whole round, or at its timeout. A Worker's poll that
  // fails so is polled again at the next address after the worker's pause.
  // A node that stops answering on a connection already up (paused, or cut
  // off by a network that drops packets) is found by keepalive pings: a
  // ping every 10 s of quiet, unanswered for 5 s, closes the connection and
  // fails its calls UNAVAILABLE, so they move on within 15 s rather than
  // waiting out their timeouts (ConnectionOptions::keepalive_interval and
  // keepalive_timeout; a call another node forwards to the stopped one is
  // found by the nodes' pings, reprise-server --peer-keepalive-*).
  // Measured with the defaults, a node stopped with SIGSTOP: a client's call
  // on it moved after 15.2 s, one forwarded to it after 15.0 s, a worker
  // after 15.4 s (docs/cluster.md, "A node that stops answering").
  // Throws reprise::Error naming the entry when a list holds one that is
  // not HOST:PORT.
  static std::shared_ptr<Connection> remote(const std::string& address);
  // Over TLS (reprise/tls.hpp); a server that refuses the handshake (an
  // untrusted certificate, a client certificate missing or refused) shows
  // as calls failing with RpcError UNAVAILABLE.
  static std::shared_ptr<Connection> remote(const std::string& address, const TlsOptions& tls);
  // With an API key and a namespace, and TLS or not
  // (reprise/connection_options.hpp).
  static std::shared_ptr<Connection> remote(const std::string& address, const ConnectionOptions& options);
  // The engine in this process on a local SQLite file (created if missing):
  // the same API, no server. Needs the reprise_embedded library. Throws
  // reprise::Error naming the file when it cannot be opened.
  static std::shared_ptr<Connection> embedded(const std::string& database_path);
  virtual ~Connection() = default;

  // Raw calls, for the client and the worker. `timeout` bounds the wait.
  virtual v1::StartWorkflowResponse start_workflow(const v1::StartWorkflowRequest& r) = 0;
  virtual void signal_workflow(const v1::SignalWorkflowRequest& r) = 0;
  virtual v1::QueryWorkflowResponse query_workflow(const v1::QueryWorkflowRequest& r) = 0;
  virtual void request_cancel_workflow(const v1::RequestCancelWorkflowRequest& r) = 0;
  virtual void terminate_workflow(const v1::TerminateWorkflowRequest& r) = 0;
  // Deletes a run (terminating it first if it runs). Connections that cannot
  // throw RpcError UNIMPLEMENTED.
  virtual v1::DeleteWorkflowExecutionResponse delete_workflow(const v1::DeleteWorkflowExecutionRequest& r);
  // Namespaces (docs/operations.md, "Namespaces"). Connections that cannot
  // throw RpcError UNIMPLEMENTED.
  virtual v1::RegisterNamespaceResponse register_namespace(const v1::RegisterNamespaceRequest& r);
  virtual v1::DescribeNamespaceResponse describe_namespace(const v1::DescribeNamespaceRequest& r);
  virtual v1::ListNamespacesResponse list_namespaces(const v1::ListNamespacesRequest& r);
  virtual v1::UpdateNamespaceResponse update_namespace(const v1::UpdateNamespaceRequest& r);
  virtual v1::DescribeWorkflowResponse describe_workflow(const v1::DescribeWorkflowRequest& r) = 0;
  virtual v1::ListWorkflowsResponse list_workflows(const v1::ListWorkflowsRequest& r) = 0;
  virtual v1::GetHistoryResponse get_history(const v1::GetHistoryRequest& r, std::chrono::seconds timeout) = 0;
  virtual v1::PollWorkflowTaskResponse poll_workflow_task(const v1::PollWorkflowTaskRequest& r) = 0;
  // The answer carries the activities the server started for this worker
  // (eager execution), if the commands asked for any.
  virtual v1::CompleteWorkflowTaskResponse complete_workflow_task(const v1::CompleteWorkflowTaskRequest& r) = 0;
  virtual void fail_workflow_task(const v1::FailWorkflowTaskRequest& r) = 0;
  virtual v1::PollActivityTaskResponse poll_activity_task(const v1::PollActivityTaskRequest& r) = 0;
  virtual bool heartbeat_activity(const v1::HeartbeatActivityRequest& r) = 0;  // cancel requested?
  virtual void complete_activity(const v1::CompleteActivityRequest& r) = 0;
  virtual void fail_activity(const v1::FailActivityRequest& r) = 0;
  virtual void report_activity_canceled(const v1::ReportActivityCanceledRequest& r) = 0;
  // complete_activity and fail_activity with the server's answer: the
  // workflow task it started for this worker when the request asked for one
  // (eager_workflow_task_queue). A connection that does not override these
  // sends the request without asking, and answers nothing.
  virtual v1::CompleteActivityResponse complete_activity_answered(const v1::CompleteActivityRequest& r);
  virtual v1::FailActivityResponse fail_activity_answered(const v1::FailActivityRequest& r);
  // The blob store: uploads bytes (streamed in chunks), and downloads the
  // bytes stored under a 32-byte sha256.
  virtual v1::PutPayloadResponse put_payload(std::string_view bytes) = 0;
  virtual std::string get_payload(const std::string& sha256) = 0;
  // Ends the task polls now in flight on this connection: each returns an
  // empty answer at once instead of at the server's poll timeout (a task
  // matched meanwhile goes back to its queue). For Worker::stop(); the
  // pollers of other workers on the connection simply poll again.
  virtual void cancel_polls() {}

  // Eager workflow start (StartOptions::eager_start), as in Temporal: a
  // Worker registers itself here, for the task queue it polls through this
  // connection, while it runs; a start on this connection for that queue
  // then asks the server for the first workflow task in its answer and
  // hands it to the worker, with no poll. Thread safety: any thread.
  class EagerStartTarget {
   public:
    virtual ~EagerStartTarget() = default;
    virtual std::string identity() const = 0;
    // Holds a free workflow thread for a task; false when none is free or
    // the worker is stopping.
    virtual bool reserve() = 0;
    // Runs the task the server started for it on the held thread.
    virtual void run(v1::PollWorkflowTaskResponse task) = 0;
    // Gives the held thread back: the server started no task for it.
    virtual void release() = 0;
  };
  void add_eager_start_target(const std::string& task_queue, std::shared_ptr<EagerStartTarget> target);
  void remove_eager_start_target(const std::string& task_queue, const EagerStartTarget* target);
  // start_workflow(r), asking for the first workflow task when a registered
  // worker for r's task queue has a free thread, and running it there.
  v1::StartWorkflowResponse start_workflow_eagerly(v1::StartWorkflowRequest r);

  Connection();

 private:
  class EagerStartTargets;  // sdk/src/connection.cpp
  std::shared_ptr<EagerStartTargets> eager_start_targets_;
};

// Every member has a default, so partial designated initializers compile
// cleanly under -Wextra.
struct StartOptions {
  std::string id{};                           // the workflow id: one open run per id
  std::string task_queue{};                   // where its workers poll
  std::chrono::seconds execution_timeout{0};  // 0: none
  // How long a worker may take over one workflow task before it is given
  // to another (0: the server's default, 10 s).
  std::chrono::milliseconds workflow_task_timeout{0};
  // Names this start call: a start retried with the same request id returns
  // the run the first one started (started() is then false). "" = a fresh
  // one per call, so starting a closed workflow's id again starts a new run.
  std::string request_id{};
  // Whether the id may start a new run after its last run closed
  // (UNSPECIFIED: allowed, as ALLOW_DUPLICATE).
  v1::WorkflowIdReusePolicy id_reuse_policy{v1::WORKFLOW_ID_REUSE_POLICY_UNSPECIFIED};
  // Unset: a failed run stays failed. Set: a run that fails or times out is
  // retried as a new run of the same id after the policy's backoff, and
  // result() gives the last run's outcome.
  std::optional<RetryPolicy> retry_policy{};
  // Eager start: when a Worker of this process polls task_queue through
  // the same Connection and has a free workflow thread, the server starts
  // the first workflow task in the start itself and hands it to that worker
  // in the answer (one poll and one durable write fewer). Otherwise, or
  // when the server does not take it, the start is as usual.
  bool eager_start = false;
};

// The workflow did not close within the time result() was given.
class REPRISE_EXPORT ResultTimeoutError : public Error {
 public:
  using Error::Error;
};

// Long-polls the run's close event, following continue-as-new; the result,
// WorkflowFailedError, or ResultTimeoutError once `timeout` (if any) passes.
REPRISE_EXPORT v1::Payloads wait_for_workflow_result(Connection& connection, const std::string& workflow_id,
                                                     std::string run_id,
                                                     std::optional<std::chrono::milliseconds> timeout = std::nullopt);
// The result a run's close event gives, or WorkflowFailedError; a close
// that hands on to a next run (continue-as-new, a retry) is followed with
// wait_for_workflow_result.
REPRISE_EXPORT v1::Payloads workflow_result_of(Connection& connection, const std::string& workflow_id,
                                               const v1::HistoryEvent& close_event);

namespace detail {

// A random version-4 UUID: the request id of one client call, reused only
// by that call's retries. Thread-safe.
REPRISE_EXPORT std::string new_request_id();

REPRISE_EXPORT void request_cancel(Connection& connection, const std::string& workflow_id, const std::string& run_id,
                                   const std::string& reason);
REPRISE_EXPORT void terminate(Connection& connection, const std::string& workflow_id, const std::string& run_id,
                              const std::string& reason);
REPRISE_EXPORT v1::DescribeWorkflowResponse describe(Connection& connection, const std::string& workflow_id,
                                                     const std::string& run_id);
// Calls `call` with the current run of the chain `run_id` began: `run_id`,
// or the run its close event handed on to (continue-as-new, a retry), and so
// on, as result() follows it; empty `run_id` stays empty (the server's
// current run). When that run closes into a next one before the call reaches
// it (FAILED_PRECONDITION), the call goes to the next one.
REPRISE_EXPORT void on_current_run(Connection& connection, const std::string& workflow_id, const std::string& run_id,
                                   const std::function<void(const std::string& current_run_id)>& call);
// Fetches claim-check payloads a client reads (results, query answers).
REPRISE_EXPORT PayloadLoader blob_loader(std::shared_ptr<Connection> connection);

}  // namespace detail

// A run of a workflow, to wait for, cancel or look at.
template <typename T>
class WorkflowHandle {
 public:
  WorkflowHandle(std::shared_ptr<Connection> connection, std::string workflow_id, std::string run_id,
                 bool started = true)
      : connection_(std::move(connection)),
        workflow_id_(std::move(workflow_id)),
        run_id_(std::move(run_id)),
        started_(started) {}
  const std::string& workflow_id() const { return workflow_id_; }
  // The run start() made (empty from Client::handle()): the first of the
  // chain that result(), cancel(), terminate() and describe() follow.
  const std::string& run_id() const { return run_id_; }
  // False when the start that made this handle found its run already there:
  // a retry of an earlier start with the same request id.
  bool started() const { return started_; }

  // Waits for the workflow to close (following continue-as-new) and returns
  // its result, or throws WorkflowFailedError; with a timeout, throws
  // ResultTimeoutError when it is still running by then.
  T result(std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
    return decode(wait_for_workflow_result(*connection_, workflow_id_, run_id_, timeout));
  }
  // The result a close event of this handle's chain gives: what a start
  // that waited for the result brought back.
  T result_of(const v1::HistoryEvent& close_event) {
    return decode(workflow_result_of(*connection_, workflow_id_, close_event));
  }

  // Asks the workflow to cancel: its code sees CanceledError at its next
  // wait and may clean up before it closes as canceled.
  // Each goes to the chain's current run: after a retry or continue-as-new,
  // the live run, not the closed one start() made.
  void cancel(const std::string& reason = "") {
    detail::on_current_run(*connection_, workflow_id_, run_id_, [&](const std::string& run_id) {
      detail::request_cancel(*connection_, workflow_id_, run_id, reason);
    });
  }
  // Closes the workflow at once; its code does not run again.
  void terminate(const std::string& reason) {
    detail::on_current_run(*connection_, workflow_id_, run_id_, [&](const std::string& run_id) {
      detail::terminate(*connection_, workflow_id_, run_id, reason);
    });
  }
  v1::DescribeWorkflowResponse describe() {
    v1::DescribeWorkflowResponse out;
    detail::on_current_run(*connection_, workflow_id_, run_id_, [&](const std::string& run_id) {
      out = detail::describe(*connection_, workflow_id_, run_id);
    });
    return out;
  }

 private:
  T decode(const v1::Payloads& payloads) {
    if constexpr (!std::is_void_v<T>) {
      if (payloads.payloads_size() != 1) throw PayloadError("workflow '" + workflow_id_ + "' returned no value");
      return from_payload<T>(payloads.payloads(0), "the result of workflow '" + workflow_id_ + "'",
                             detail::blob_loader(connection_));
    }
  }

  std::shared_ptr<Connection> connection_;
  std::string workflow_id_;
  std::string run_id_;
  bool started_;
};

class Client {
 public:
  explicit Client(std::shared_ptr<Connection> connection) : connection_(std::move(connection)) {}

  template <auto Fn, typename... Args>
  WorkflowHandle<typename WorkflowDef<Fn>::result_type> start(const WorkflowDef<Fn>& workflow,
                                                              const StartOptions& options, Args&&... args) {
    v1::StartWorkflowResponse started;
    return start_run(workflow, options, false, started, std::forward<Args>(args)...);
  }

  // Starts the workflow and waits for its result: one call, the start
  // waiting on the server for the chain's close (wait_for_result). When
  // that wait ends first, or an eager start handed the first task to this
  // process's worker (the start then answers at once), the result is waited
  // for as result() does.
  template <auto Fn, typename... Args>
  typename WorkflowDef<Fn>::result_type execute(const WorkflowDef<Fn>& workflow, const StartOptions& options,
                                                Args&&... args) {
    v1::StartWorkflowResponse started;
    auto run = start_run(workflow, options, true, started, std::forward<Args>(args)...);
    if (!started.has_close_event()) return run.result();
    return run.result_of(started.close_event());
  }

  // A handle to the current run of an existing workflow.
  template <auto Fn>
  WorkflowHandle<typename WorkflowDef<Fn>::result_type> handle(const WorkflowDef<Fn>&, const std::string& workflow_id) {
    return {connection_, workflow_id, ""};
  }

  // Asks the workflow's current run; throws RpcError (DEADLINE_EXCEEDED when
  // no worker answers, INVALID_ARGUMENT when the workflow has no such query).
  template <typename T>
  T query(const std::string& workflow_id, const Query<T>& query) {
    v1::QueryWorkflowRequest r;
    r.mutable_workflow_execution()->set_workflow_id(workflow_id);
    r.set_query_type(query.name);
    const v1::QueryWorkflowResponse out = connection_->query_workflow(r);
    if (out.result().payloads_size() != 1) throw PayloadError("query '" + std::string(query.name) + "' gave no value");
    return from_payload<T>(out.result().payloads(0), "the answer to query '" + std::string(query.name) + "'",
                           detail::blob_loader(connection_));
  }

  // Writes the run's history ("" = the current run) to `path`, for the
  // replay tester and for people.
  void export_history(const std::string& workflow_id, const std::string& path,
                      HistoryFormat format = HistoryFormat::kJson, const std::string& run_id = "") {
    write_history_file(path, fetch_history(*connection_, workflow_id, run_id), format);
  }

  // Sends `value` to the workflow's current run under the signal's name.
  // The call carries a fresh request id: the server records it once even if
  // the call is retried.
  template <typename T, typename V>
  void signal(const std::string& workflow_id, const Signal<T>& signal, const V& value) {
    static_assert(std::is_convertible_v<const V&, T>,
                  "reprise: client.signal: the value is not of the Signal<T>'s type T");
    v1::SignalWorkflowRequest r;
    r.mutable_workflow_execution()->set_workflow_id(workflow_id);
    r.set_signal_name(signal.name);
    if constexpr (std::is_convertible_v<const V&, T>) *r.mutable_input() = to_payloads(static_cast<T>(value));
    uploader().offload(*r.mutable_input());
    r.set_identity("reprise-cpp-client");
    r.set_request_id(detail::new_request_id());
    connection_->signal_workflow(r);
  }

 private:
  // How long a start waits on the server for the result (execute()).
  static constexpr std::chrono::seconds kStartWait{60};

  // The start behind start() and execute(); `started` gets the server's answer.
  template <auto Fn, typename... Args>
  WorkflowHandle<typename WorkflowDef<Fn>::result_type> start_run(const WorkflowDef<Fn>& workflow,
                                                                  const StartOptions& options, bool wait_for_result,
                                                                  v1::StartWorkflowResponse& started, Args&&... args) {
    using Params = typename WorkflowDef<Fn>::signature::args;
    constexpr bool matches = detail::call_matches<Params, Args&&...>::value;
    static_assert(matches,
                  "reprise: client.start: the arguments do not match the workflow's parameters "
                  "(the error below names the workflow, what it expects and what it was called with)");
    if constexpr (!matches) {
      (void)sizeof(detail::mismatch<detail::workflow_start_mismatch, Fn, Params, Args...>);
      return {connection_, options.id, ""};
    }
    v1::StartWorkflowRequest r;
    r.set_workflow_id(options.id);
    r.mutable_workflow_type()->set_name(workflow.name);
    r.mutable_task_queue()->set_name(options.task_queue);
    if constexpr (matches) {
      *r.mutable_input() = detail::encode_as(static_cast<Params*>(nullptr), std::forward<Args>(args)...);
    }
    uploader().offload(*r.mutable_input());
    r.mutable_workflow_execution_timeout()->set_seconds(options.execution_timeout.count());
    if (options.workflow_task_timeout.count() > 0)
      set_duration(r.mutable_workflow_task_timeout(), options.workflow_task_timeout);
    r.set_request_id(options.request_id.empty() ? detail::new_request_id() : options.request_id);
    r.set_workflow_id_reuse_policy(options.id_reuse_policy);
    if (options.retry_policy) *r.mutable_retry_policy() = options.retry_policy->to_proto();
    r.set_identity("reprise-cpp-client");
    if (wait_for_result) {
      r.set_wait_for_result(true);
      r.mutable_wait_timeout()->set_seconds(kStartWait.count());
    }
    started = options.eager_start ? connection_->start_workflow_eagerly(std::move(r)) : connection_->start_workflow(r);
    return {connection_, options.id, started.run_id(), started.started()};
  }

  detail::Blobs uploader() { return detail::Blobs(*connection_, {.cache_bytes = 0}); }

  std::shared_ptr<Connection> connection_;
};

}  // namespace reprise
