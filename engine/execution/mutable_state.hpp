// MutableState: one execution's state machine, for the length of one
// transition.
//
// It is loaded from the execution's store record (or created for a new run),
// changed by exactly one operation — start, a workflow task started or
// completed, an activity started or closed, a timer fired — and turned into
// the Transition that commits the change: the new state, the appended events,
// and the task and timer rows the change creates. Operations check what they
// are given against the state (stale or forged task tokens, unknown ids,
// malformed commands) and return an error naming the problem; after an error
// the object must be discarded, never committed.
//
// Task and timer rows are not tracked for cancellation: when one is taken or
// fires, the operation checks it still applies (same scheduled event, same
// attempt) and otherwise reports it stale, and the caller drops the row.
//
// Events that arrive while a workflow task is running (an activity result, a
// fired timer) are buffered in the state and written after that task
// completes, so a worker never sees history change under it; then a new
// workflow task is scheduled for them.
//
// Thread safety: none; one transition, one thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/execution/task_token_codec.hpp"
#include "engine/store/records.hpp"
#include "history/batch_codec.hpp"
#include "history/event_builder.hpp"
#include "history/history_size.hpp"
#include "reprise/internal/state.pb.h"
#include "reprise/v1/service.pb.h"

namespace reprise::engine {

namespace internal = ::reprise::internal;

struct EngineConfig {
  history::HistoryLimits history_limits;
  std::chrono::nanoseconds default_workflow_task_timeout = std::chrono::seconds(10);
  // Failed workflow tasks are retried after 1s, 2s, 4s, … up to this.
  std::chrono::nanoseconds max_workflow_task_backoff = std::chrono::minutes(10);
  // How long a task waits on a worker's sticky queue before any worker may
  // take it (when the worker does not say).
  std::chrono::nanoseconds sticky_schedule_to_start = std::chrono::seconds(5);
  int max_pending_activities = 2000;
  int max_pending_children = 2000;
  int max_pending_external_requests = 2000;  // signals and cancels to other workflows
  // Activities one workflow-task completion may start for the worker that
  // completes it (request_eager_execution); more go to their queue.
  int max_eager_activities_per_task = 8;
  size_t max_id_length = 1000;
  // Events that wait for a running workflow task to finish; beyond either
  // limit a signal is refused (RESOURCE_EXHAUSTED) until the task completes.
  int max_buffered_events = 1000;
  int64_t max_buffered_bytes = 2ll << 20;
  // Signs the task tokens handed to workers and checks those handed back.
  // The engine replaces this one-process key with the store's keys.
  std::shared_ptr<const TaskTokenCodec> task_tokens = TaskTokenCodec::ephemeral();
};

// Where a run comes from, beyond its start request: the run it continues
// (continue-as-new or a retry) and the parent that started it (child
// workflows).
struct RunLineage {
  std::string continued_run_id;
  std::string first_run_id;  // "" = this run is the first of its chain
  std::optional<TimePoint> execution_expiration;
  v1::WorkflowExecution parent;
  int64_t parent_initiated_event_id = 0;
  v1::ContinueAsNewInitiator initiator = v1::CONTINUE_AS_NEW_INITIATOR_UNSPECIFIED;
  // A retry: its attempt, the failure it retries, and the backoff before its
  // first workflow task.
  int32_t attempt = 1;
  v1::Failure continued_failure;
  std::chrono::nanoseconds first_workflow_task_backoff{0};
};

// Makes run ids for the runs a transition creates (continue-as-new, retries).
using RunIdSource = std::function<std::string()>;
// Reads this run's WorkflowExecutionStarted attributes from its history: a
// retry starts again with the same input.
using StartedEventSource = std::function<Result<v1::WorkflowExecutionStartedEventAttributes>()>;

// Makes the id of each task hand-out (TaskToken.start_id): unique across
// server processes, so a token from before a restart never matches a task
// handed out again after it.
using StartIdSource = std::function<uint64_t()>;

// Whether a task or timer still applied when it was taken or fired.
enum class Applied { kYes, kStale };

// A change kept in memory instead of committed: tasks handed to pollers
// (engine/held_starts.hpp). The state after it and the events and timers it
// added, on top of the stored record at `version`; the run's next
// transition resumes from it and commits it along.
struct HeldChange {
  int64_t version = 0;  // of the stored record it applies to
  internal::ExecutionState state;
  std::vector<v1::HistoryEvent> events;
  std::vector<TimerRecord> timers;
};

class MutableState {
 public:
  // A new run, to be started with start().
  MutableState(ExecutionKey key, TimePoint now, const EngineConfig& config);
  // An existing run, from its store record.
  static Result<MutableState> load(const ExecutionRecord& record, TimePoint now, const EngineConfig& config);
  // An existing run whose stored state does not parse: an empty running
  // state that continues its history, enough for an operator to terminate
  // it. Nothing else may be done with it.
  static MutableState salvage(const ExecutionRecord& record, TimePoint now, const EngineConfig& config);
  // An existing run with a held change on top of its store record (whose
  // version `held` was made at): as if that change had been committed,
  // except that this transition's finish() commits it.
  static MutableState resume(const ExecutionRecord& record, const HeldChange& held, TimePoint now,
                             const EngineConfig& config);

  // --- operations (one per transition) ---

  // WorkflowExecutionStarted and the first workflow task.
  Status start(const v1::StartWorkflowRequest& request, const RunLineage& lineage = {});
  // The request holds claim-check references: finish() records a blob
  // reference for each one the execution now holds.
  void expect_claim_checks() { claim_checks_ = true; }
  // Needed before a workflow task completes with continue-as-new, and before
  // a run with a retry policy fails or times out.
  void set_run_id_source(RunIdSource source) { run_ids_ = std::move(source); }
  void set_started_event_source(StartedEventSource source) { started_event_ = std::move(source); }
  // Ids for the hand-outs this transition starts; without one, 0.
  void set_start_id_source(StartIdSource source) { start_ids_ = std::move(source); }

  // A poller took the workflow task row with `payload`. Fills the response's
  // token and ids (the caller adds the history).
  Result<Applied> start_workflow_task(const internal::TaskPayload& payload, const std::string& identity,
                                      v1::PollWorkflowTaskResponse& response);
  // Eager workflow task: when this transition wakes the workflow and its
  // next workflow task would go to `sticky_queue` (the worker's own queue,
  // for an activity result; "" for the workflow's task queue, for a start),
  // schedules that task and starts it for `identity` in this transition,
  // with no task row, instead of queuing it. The task lacks its history,
  // which the caller reads once the transition is committed (as for a
  // poll: `sticky` says from where). Nothing when it is not taken.
  struct EagerWorkflowTask {
    ExecutionKey execution;
    bool sticky = false;
    v1::PollWorkflowTaskResponse task;
    // The transition is held with the activity result that woke the task
    // (hold_requested()), and `task` already has its history.
    bool held = false;
  };
  std::optional<EagerWorkflowTask> start_eager_workflow_task(const std::string& sticky_queue,
                                                             const std::string& identity);
  // What the worker hears once the completion is committed: OK, with the
  // activities started for it to run (eager execution), or ABORTED when
  // events arrived while the task ran and its commands would have closed
  // the workflow over them, so the task failed instead (the worker drops
  // the task quietly; a new task brings the events).
  struct CompletionAnswer {
    Status status;
    std::vector<v1::PollActivityTaskResponse> activity_tasks{};
  };
  Result<CompletionAnswer> complete_workflow_task(const internal::TaskToken& token,
                                                  const v1::CompleteWorkflowTaskRequest& request);
  Status fail_workflow_task(const internal::TaskToken& token, const v1::FailWorkflowTaskRequest& request);

  // A poller took the activity task row with `payload`.
  Result<Applied> start_activity(const internal::TaskPayload& payload, const std::string& identity,
                                 v1::PollActivityTaskResponse& response);
  // Returns whether cancellation was requested.
  Result<bool> heartbeat_activity(const internal::TaskToken& token, const v1::Payloads& details);
  Status complete_activity(const internal::TaskToken& token, const v1::Payloads& result, const std::string& identity);
  Status fail_activity(const internal::TaskToken& token, const v1::Failure& failure,
                       const v1::Payloads& last_heartbeat_details, const std::string& identity);
  // The worker stopped the activity because cancellation was requested.
  Status report_activity_canceled(const internal::TaskToken& token, const v1::Payloads& details,
                                  const std::string& identity);

  // From clients.
  Status signal(const std::string& name, const v1::Payloads& input, const std::string& identity,
                const std::string& request_id);
  Status request_cancel(const std::string& reason, const std::string& identity);
  Status terminate(const std::string& reason, const v1::Payloads& details, const std::string& identity);

  // Child workflows (child_workflows.cpp), from the engine's transfer tasks.
  // Starts the child initiated by `initiated_event_id` as run
  // `child_run_id`, unless `existing` (its id's current run) forbids it;
  // the child is created in this transition.
  Result<Applied> start_child(int64_t initiated_event_id,
                              const v1::StartChildWorkflowExecutionInitiatedEventAttributes& attributes,
                              const std::optional<CurrentRun>& existing, const std::string& child_run_id);
  // What starts the child `attributes` describe for run `parent`, here or
  // on the node that serves the child's shard.
  static v1::StartWorkflowRequest child_start_request(
      const ExecutionKey& parent, const v1::StartChildWorkflowExecutionInitiatedEventAttributes& attributes);
  static RunLineage child_lineage(const ExecutionKey& parent, int64_t initiated_event_id);
  // The request id a child started by another node carries: fixed by the
  // parent's run and initiated event, so a retried start finds the run the
  // first attempt started, on that node or on this one.
  static std::string child_start_request_id(const ExecutionKey& parent, int64_t initiated_event_id);
  // Whether the child initiated by `initiated_event_id` waits for its start
  // (this run is open and has recorded neither a start nor a failure).
  bool child_start_pending(int64_t initiated_event_id) const;
  // The child was started as run `child_run_id` (by another node: the child
  // is not part of this transition), or could not start for `cause`.
  Result<Applied> record_child_started(int64_t initiated_event_id,
                                       const v1::StartChildWorkflowExecutionInitiatedEventAttributes& attributes,
                                       const std::string& child_run_id);
  Result<Applied> record_child_start_failed(int64_t initiated_event_id,
                                            const v1::StartChildWorkflowExecutionInitiatedEventAttributes& attributes,
                                            v1::ExternalFailureCause cause);
  // The child closed with `close_event` (its last event); UNAVAILABLE while
  // the child's start is not recorded yet (started by another node).
  Result<Applied> record_child_closed(int64_t initiated_event_id, const v1::WorkflowExecution& child,
                                      const v1::HistoryEvent& close_event);
  // Signals and cancel requests to other workflows (external_requests.cpp).
  // The identity and request id a target records for the request initiated
  // by `initiated_event_id`: the same on every delivery attempt, so a retried
  // delivery signals once.
  std::string external_request_id(int64_t initiated_event_id) const;
  // The request was delivered (`failure` UNSPECIFIED), or failed: its
  // target does not exist or is closed (NOT_FOUND) or is not this run's
  // child when only a child was asked for (NOT_CHILD). Records the outcome.
  Result<Applied> record_external_outcome(int64_t initiated_event_id, v1::ExternalFailureCause failure);
  // Whether the request is still waiting for its outcome (the sender is
  // open and has not recorded one).
  bool external_request_pending(int64_t initiated_event_id) const;

  // This run's parent closed; `policy` says what happens to this run. If
  // this run had closed into the next of its chain (continue-as-new, a
  // retry) before the policy reached it, the policy is that run's: its id is
  // returned and nothing here changes. Otherwise "" (applied, or nothing to do).
  Result<std::string> apply_parent_close_policy(const v1::WorkflowExecution& parent, v1::ParentClosePolicy policy);

  // A durable timer row came due.
  Result<Applied> fire_timer(const internal::TimerTask& timer);

  // --- results ---

  // The transition that commits this change, conditional on the version the
  // state was loaded at, and the run it continued as, if it did. For a new
  // run the caller adds the current-run write.
  Result<Transition> finish(history::EventBatchCodec& codec);

  // Workflow tasks for workers' sticky queues: handed to matching after the
  // commit, never stored.
  const std::vector<TaskRecord>& sticky_tasks() const { return sticky_tasks_; }
  const internal::ExecutionState& state() const { return state_; }
  const ExecutionKey& key() const { return key_; }
  int64_t next_event_id() const { return builder_.next_event_id(); }
  bool closed() const { return state_.status() != v1::WORKFLOW_EXECUTION_STATUS_RUNNING; }
  bool became_closed() const { return became_closed_; }
  // The operation found its task or timer no longer applies and changed
  // nothing: the caller only drops the row, without rewriting the execution.
  bool found_stale() const { return stale_; }
  // The operation changed nothing and leaves its row in place (a retried
  // signal; a parent-close policy meant for the chain's next run): nothing
  // is committed, and the caller gets the operation's outcome.
  bool unchanged() const { return unchanged_; }
  // The operation decides to change nothing (a request this run refuses).
  void change_nothing() { unchanged_ = true; }
  // This transition resumed a held change (resume()).
  bool resumed_held() const { return resumed_held_; }
  // The operation only started tasks: besides the state, it added nothing
  // but its own events and timers (no task rows, no other run, no close,
  // nothing to wake the workflow, no blob references, within the history
  // limits), so losing it in a crash loses nothing but the hand-out, and
  // it may be held instead of committed.
  bool only_started_tasks() const;
  // The change to hold instead of finish(); the object is spent.
  HeldChange hold() &&;
  // The events of this transition and of the held change it resumed: every
  // event not yet stored, in order.
  const std::vector<v1::HistoryEvent>& unstored_events() const { return builder_.events(); }
  // Asks the engine to hold this transition instead of committing it even
  // though it records more than started tasks: an activity's result whose
  // worker keeps it until the workflow task it woke, handed to that worker,
  // is answered (docs/engine.md, "Activity results held with their workflow
  // task"). Only for a change only_started_tasks() allows otherwise.
  void request_hold() { hold_requested_ = true; }
  bool hold_requested() const { return hold_requested_; }
  // Whether the held change this transition resumed records `result` as
  // the outcome of the attempt `token` names: a result reported again
  // while it is still held, whose commit is then the report's answer.
  bool holds_result_of(const internal::TaskToken& token, const v1::Payloads& result) const;

 private:
  MutableState(ExecutionKey key, internal::ExecutionState state, int64_t version, int64_t next_event_id, TimePoint now,
               const EngineConfig& config);

  Status check_open() const;
  Status check_workflow_task_token(const internal::TaskToken& token) const;
  Result<internal::ActivityInfo*> activity_for_token(const internal::TaskToken& token);

  // Appends an event now (the workflow's own events), or buffers it when a
  // workflow task is running and the workflow must see it next time.
  v1::HistoryEvent& append(v1::HistoryEvent event);
  v1::HistoryEvent& deliver(v1::HistoryEvent event);
  // A signal arriving while a workflow task runs waits in the buffer; the
  // buffer is bounded (EngineConfig::max_buffered_*).
  Status check_buffer_room(const v1::HistoryEvent& event) const;
  // Writes the buffered events; with `wake`, a workflow task follows.
  void flush_buffered_events(bool wake = true);
  // Before the server closes the workflow itself (terminate, run timeout,
  // history limit): a running workflow task is failed (FORCE_CLOSE) and
  // what arrived while it ran is written, so no signal or activity result
  // the engine acknowledged is dropped from history.
  void end_workflow_task_for_close();
  // A transient workflow task stops being one: its events are written.
  void write_transient_scheduled();
  Status write_transient_events();

  void schedule_workflow_task();
  // The workflow task's scheduled event (or a retry's transient one) and
  // state, without the task row: returns its scheduled event id.
  int64_t record_workflow_task_scheduled();
  void wake_workflow();  // schedules a workflow task unless one is pending
  void add_workflow_task_row(bool sticky);
  void set_sticky(const v1::StickyExecutionAttributes& attributes);
  Result<CompletionAnswer> reject_closing_completion(const std::string& identity);
  // What start() requires of a new run's type, queue, timeouts and retry
  // policy, checked where a command asks for one (child, continue-as-new)
  // so a bad command fails its workflow task instead of a transfer that can
  // never succeed.
  Status check_new_run(const v1::WorkflowType& type, const std::string& task_queue,
                       const google::protobuf::Duration& execution_timeout,
                       const google::protobuf::Duration& run_timeout, const google::protobuf::Duration& task_timeout,
                       const v1::RetryPolicy& retry_policy, const std::string& where) const;
  Status initiate_child(const v1::StartChildWorkflowExecutionCommandAttributes& a, int64_t completed_event_id,
                        const std::string& where);
  void add_transfer(const ExecutionKey& target, const internal::TransferTask& task);
  // Closing: tell the parent, apply the parent-close policy to children.
  void notify_close();
  Status initiate_signal_external(const v1::SignalExternalWorkflowExecutionCommandAttributes& a,
                                  int64_t completed_event_id, const std::string& where);
  Status initiate_cancel_external(const v1::RequestCancelExternalWorkflowExecutionCommandAttributes& a,
                                  int64_t completed_event_id, const std::string& where);
  Status check_external_target(const v1::WorkflowExecution& target, const std::string& where) const;
  Status continue_as_new(const v1::ContinueAsNewWorkflowExecutionCommandAttributes& a, int64_t completed_event_id,
                         const std::string& where);
  // The start of the run that continues this one (continue-as-new or a
  // retry): the same workflow id, type, task queue, timeouts and retry
  // policy; continue-as-new replaces what its command sets.
  v1::StartWorkflowRequest next_run_request() const;
  // Creates the run this one continues as (continue-as-new or a retry), to
  // be committed with this transition; call before close(). It fills in the
  // chain's part of `lineage` (this run, the chain's first run, the execution
  // deadline, the parent); the caller sets how the new run begins.
  Status start_next_run(const v1::StartWorkflowRequest& next, RunLineage lineage);
  // Retries (workflow_retry.cpp). When the run's retry policy retries
  // `failure` now, starts the next attempt and returns its run id ("" when
  // the run is not retried); the caller writes it into the close event.
  Result<std::string> retry_run(const v1::Failure& failure);
  // The backoff before the next attempt, if the policy retries `failure`.
  std::optional<std::chrono::nanoseconds> retry_backoff_for(const v1::Failure& failure) const;
  // The run fails (a command) or its run timeout passes; either may retry.
  Status fail_run(const v1::Failure& failure, int64_t completed_event_id);
  Status time_out_run();
  // Commands that end the run or record a marker (mutable_state.cpp);
  // fail_run may retry, so it lives in workflow_retry.cpp.
  Status complete_run(const v1::CompleteWorkflowExecutionCommandAttributes& c, int64_t completed_event_id);
  Status cancel_run(const v1::CancelWorkflowExecutionCommandAttributes& c, int64_t completed_event_id);
  Status record_marker(const v1::RecordMarkerCommandAttributes& m, int64_t completed_event_id,
                       const std::string& where);
  // The first workflow task of a retried run may go out (workflow_retry.cpp).
  Result<Applied> end_workflow_backoff(const internal::TimerTask& timer);
  // Dispatches one command of a completed workflow task to its entity.
  Status apply_command(const v1::Command& command, int64_t completed_event_id, size_t index);
  // Workflow task timers (workflow_tasks.cpp).
  Result<Applied> time_out_workflow_task(const internal::TimerTask& timer);
  // Whether the workflow task timeout `timer` is for the task running now
  // (started, same scheduled event and attempt). Once not, it never is
  // again: a task that ends is never started again under the same ids.
  bool times_out_running_task(const internal::TimerTask& timer) const;
  // A timer this transition already made stale: the run closed (its timers
  // go with the close), or the workflow task it times out ended in it.
  bool stale_already(const TimerRecord& timer) const;
  Result<Applied> time_out_sticky_task(const internal::TimerTask& timer);
  Result<Applied> retry_workflow_task(const internal::TimerTask& timer);
  // Activities (activities.cpp): the commands, the timers, the outcomes.
  Status schedule_activity(const v1::ScheduleActivityTaskCommandAttributes& a, int64_t completed_event_id,
                           size_t index);
  Status request_cancel_activity(int64_t scheduled_event_id, int64_t completed_event_id, const std::string& where);
  Result<Applied> start_activity_retry(const internal::TimerTask& timer);
  Result<Applied> time_out_activity(const internal::TimerTask& timer);
  // User timers (timers.cpp).
  Status start_timer(const v1::StartTimerCommandAttributes& a, int64_t completed_event_id, const std::string& where);
  Status cancel_timer(const std::string& timer_id, int64_t completed_event_id, const std::string& where);
  Result<Applied> fire_user_timer(const internal::TimerTask& timer);
  void close(v1::WorkflowExecutionStatus status);

  bool should_retry(const internal::ActivityInfo& activity, const v1::Failure& failure) const;
  void retry_activity(internal::ActivityInfo& activity, int64_t scheduled_event_id, const v1::Failure& failure);
  void close_activity(int64_t scheduled_event_id, v1::HistoryEvent outcome);
  void add_activity_task(const internal::ActivityInfo& activity, int64_t scheduled_event_id);
  // The attempt `info` starts for `identity` (a poll, or eager execution):
  // its timeout timers and the task the worker runs, input aside.
  void start_attempt(int64_t scheduled_event_id, internal::ActivityInfo& info, const std::string& identity,
                     v1::PollActivityTaskResponse& response);
  uint64_t next_start_id() { return start_ids_ ? start_ids_() : 0; }
  // The activities this completion schedules that its worker asked to run
  // itself: started once every command is applied, unless the run closed.
  std::vector<v1::PollActivityTaskResponse> start_eager_activities(const std::string& identity);

  void add_timer(TimePoint fire_at, const internal::TimerTask& task);
  Applied stale();
  void enforce_history_limits();

  ExecutionKey key_;
  internal::ExecutionState state_;
  int64_t version_;
  TimePoint now_;
  const EngineConfig& config_;
  history::HistoryBuilder builder_;
  std::vector<TaskRecord> tasks_;
  std::vector<TaskRecord> sticky_tasks_;
  std::vector<TimerRecord> timers_;
  // Scheduled by this completion for eager execution: scheduled event id
  // and input (no task row was added for them).
  std::vector<std::pair<int64_t, v1::Payloads>> eager_activities_;
  bool became_closed_ = false;
  // New events for the workflow: finish() schedules a workflow task unless
  // one is pending.
  bool wake_pending_ = false;
  bool stale_ = false;
  bool unchanged_ = false;
  bool claim_checks_ = false;
  bool resumed_held_ = false;
  bool hold_requested_ = false;
  RunIdSource run_ids_;
  StartIdSource start_ids_;
  StartedEventSource started_event_;
  // The run this one continued as, created and committed with it.
  std::unique_ptr<MutableState> continued_as_;
  // A child started by this transition, and the current run it replaces.
  std::unique_ptr<MutableState> started_child_;
  std::string started_child_replaces_;
};

}  // namespace reprise::engine
