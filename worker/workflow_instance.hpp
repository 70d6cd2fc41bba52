// WorkflowInstance: one workflow execution as a worker holds it — the
// workflow's coroutines, the commands they issued, and the futures waiting
// on events — rebuilt from history by replay and then carried forward one
// workflow task at a time.
//
// apply() takes history events in order (all of them for a fresh instance;
// only the new ones for a cached, sticky one). At each WorkflowTaskStarted
// that history shows completed, the workflow runs until every coroutine
// waits (an activation, replaying); the commands it issues must then match
// the events recorded after that task, one for one, or apply() fails with a
// non-determinism error naming the event, what history recorded and what the
// code did. The last WorkflowTaskStarted is the task being worked on: the
// commands its activation issues are the answer.
//
// Thread safety: none. One workflow task at a time, on one thread.
#pragma once

#include <coroutine>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "history/status.hpp"
#include "reprise/detail/blobs.hpp"
#include "reprise/detail/workflow_starter.hpp"
#include "reprise/stackful.hpp"
#include "reprise/v1/history.pb.h"
#include "reprise/workflow.hpp"
#include "worker/apply_result.hpp"
#include "worker/machines/command_machine.hpp"
#include "worker/machines/event_owner.hpp"
#include "worker/machines/local_activity_machine.hpp"
#include "worker/machines/marker_machine.hpp"
#include "worker/signal_inbox.hpp"

namespace reprise::worker {

class WorkflowInstance final : public detail::WorkflowCore, public FutureResolver {
 public:
  // The starter is shared by every instance of the type (a worker holds
  // thousands of instances; each copy of a std::function costs a heap block).
  WorkflowInstance(std::string workflow_type, std::shared_ptr<const WorkflowStarter> starter,
                   PanicPolicy panic = PanicPolicy::kFailTask);
  WorkflowInstance(std::string workflow_type, WorkflowStarter starter, PanicPolicy panic = PanicPolicy::kFailTask)
      : WorkflowInstance(std::move(workflow_type), std::make_shared<const WorkflowStarter>(std::move(starter)), panic) {
  }
  ~WorkflowInstance() override;
  WorkflowInstance(const WorkflowInstance&) = delete;

  // A NonDeterminism, INVALID_ARGUMENT for a history that does not continue
  // where the last one ended, and the workflow's bugs (under
  // PanicPolicy::kFailTask) as INTERNAL with their message; after an error
  // the instance must be dropped.
  ApplyResult apply(const v1::History& events);

  // Applies `events` as replay only, for a query: the tasks history shows
  // completed are replayed, and a trailing WorkflowTaskStarted (a task in
  // flight on some worker) is not run, so no live code runs (no side
  // effect computed, no log line) and the state is one that existed.
  ApplyResult replay_completed(const v1::History& events);

  // Runs the handler of query `name` on the state the applied history left
  // (as of its last completed task). Before any task has completed there is
  // no such state and no code runs: FAILED_PRECONDITION (the server holds a
  // query until the first task completes, so only a run that closed before
  // its first task gets here). NOT_FOUND names the queries the workflow
  // answers; a throwing handler is INTERNAL with its message.
  Result<v1::Payloads> query(const std::string& name);

  // Who the instance is, from the task it works on (the worker sets it
  // before apply()).
  void set_execution(const std::string& workflow_id, const std::string& run_id) {
    info_.workflow_id = workflow_id;
    info_.run_id = run_id;
  }

  // Where claim-check payloads are fetched from (none: reading one fails).
  void set_blobs(detail::Blobs* blobs) { blobs_ = blobs; }

  // The local activities the code waits for and this worker must run, in
  // the order called; none once the run's close is issued (nothing after it
  // could be sent).
  std::vector<std::shared_ptr<LocalActivityMachine>> local_activities() const;
  // Their outcomes, one per local_activities() in that order: resolves
  // them (each issues its marker) and runs the code on until it waits
  // again. The activation holds every command the task has issued so far.
  ApplyResult resolve_local_activities(const std::vector<LocalActivityOutcome>& outcomes);
  // The run's workflow task timeout, from its started event.
  std::chrono::nanoseconds workflow_task_timeout() const { return workflow_task_timeout_; }

  int64_t last_event_id() const { return last_event_id_; }
  // What the instance holds in memory, roughly: its coroutine frames
  // (counted exactly), the values it keeps, and a fixed overhead per
  // pending operation. The worker's cache bound is in these bytes.
  size_t approximate_bytes() const;
  bool finished() const { return closed_ || completion_issued_; }

  // detail::WorkflowCore
  std::shared_ptr<detail::Pending> schedule_activity(v1::ScheduleActivityTaskCommandAttributes attributes,
                                                     bool cancellable) override;
  std::shared_ptr<detail::Pending> schedule_local_activity(v1::ScheduleActivityTaskCommandAttributes attributes,
                                                           bool cancellable) override;
  std::shared_ptr<detail::Pending> start_timer(std::chrono::nanoseconds duration, bool cancellable) override;
  std::shared_ptr<detail::Pending> start_child(v1::StartChildWorkflowExecutionCommandAttributes attributes,
                                               bool cancellable) override;
  std::shared_ptr<detail::Pending> signal_external(v1::SignalExternalWorkflowExecutionCommandAttributes attributes,
                                                   bool cancellable) override;
  std::shared_ptr<detail::Pending> cancel_external(
      v1::RequestCancelExternalWorkflowExecutionCommandAttributes attributes, bool cancellable) override;
  std::shared_ptr<detail::Pending> next_signal(const std::string& name, bool cancellable) override;
  void cancel(const std::shared_ptr<detail::Pending>& pending) override;
  // Also FutureResolver: how the machines resolve their futures.
  void resolve(const std::shared_ptr<detail::Pending>& pending) override;
  void spawn(std::coroutine_handle<> branch) override;
  void continue_as_new(v1::ContinueAsNewWorkflowExecutionCommandAttributes attributes) override;
  v1::Payloads side_effect(const std::function<v1::Payloads()>& compute) override;
  bool patched(const std::string& id) override;
  bool cancel_requested() const override { return cancel_requested_; }
  v1::Payload load_payload(const v1::Payload& claim_check) override;
  void set_query_handler(const std::string& name, std::function<v1::Payloads()> handler) override {
    query_handlers_[name] = std::move(handler);
  }
  uint64_t next_random() override;
  TimePoint now() const override { return now_; }
  bool replaying() const override { return replaying_; }
  const WorkflowInfo& info() const override { return info_; }

 private:
  ApplyResult apply_events(const v1::History& events, bool run_last_task);
  // The one way a non-determinism is reported: the instance has diverged
  // from its history, and apply() says so with its own error type.
  Status nondeterminism(NonDeterminism divergence);
  // Hands `e` to the machine that owns it (event_owner.hpp).
  Status apply_event(const v1::HistoryEvent& e);
  // `e` records a command: the next one the code issued must be it.
  Status apply_recorded_command(const v1::HistoryEvent& e, const EventOwner& owner);
  // `e` is an outcome for the machine indexed under `key` in `index`.
  template <typename Index, typename Key>
  Status apply_outcome(const v1::HistoryEvent& e, Index& index, const Key& key, const char* unknown);
  // The run's own events: its start, signals, cancel requests, its end by the server.
  Status apply_workflow_event(const v1::HistoryEvent& e);
  // Keeps `machine` under `key` while it awaits an outcome, and drops it after.
  void reindex(const MachineKey& key, const std::shared_ptr<FutureMachine>& machine);
  // The recorded machine whose future is `pending`, if any.
  std::shared_ptr<FutureMachine> recorded_machine(const std::shared_ptr<detail::Pending>& pending) const;
  Status activate();
  // Resumes ready coroutines until every one waits; while replaying, local
  // activities whose markers this task recorded resolve in between, as
  // they did when the task first ran.
  Status run_until_blocked();
  // Resolves the waiting local activities from this task's markers; false
  // when there were none.
  bool resolve_recorded_local_activities();
  // The result of an activation: its commands, or why there are none.
  ApplyResult activation_result(const Status& status) const;
  // A new future for a command of `kind`, and whether to issue the command:
  // not when the future is cancellable and the workflow is being canceled
  // (it comes back canceled).
  std::pair<std::shared_ptr<detail::Pending>, bool> new_pending(detail::Pending::Kind kind, std::string name,
                                                                bool cancellable);
  // Resolves `pending` as canceled; it was never issued or is being canceled.
  void resolve_canceled(const std::shared_ptr<detail::Pending>& pending);
  void deliver_cancel_request();
  Status finish_workflow();
  void reap_finished_branches();

  std::string workflow_type_;
  std::shared_ptr<const WorkflowStarter> starter_;
  PanicPolicy panic_;
  WorkflowContext context_;
  std::unique_ptr<RunningWorkflow> body_;
  std::vector<std::coroutine_handle<>> branches_;  // spawned, owned here until they finish
  v1::Payloads input_;
  bool started_ = false;
  bool completion_issued_ = false;
  bool closed_ = false;
  bool replaying_ = false;
  bool cancel_requested_ = false;  // WorkflowExecutionCancelRequested applied
  bool cancel_delivered_ = false;  // ... and the pending work canceled
  bool diverged_ = false;          // a non-determinism was found
  std::optional<v1::Command> continue_as_new_;
  TimePoint now_;
  int64_t last_event_id_ = 0;
  int64_t activity_seq_ = 0;
  int64_t timer_seq_ = 0;
  int64_t child_seq_ = 0;
  int64_t side_effect_seq_ = 0;
  int64_t local_activity_seq_ = 0;
  std::chrono::nanoseconds workflow_task_timeout_{std::chrono::seconds(10)};
  // Called and not yet resolved, in the order called.
  std::list<std::shared_ptr<LocalActivityMachine>> local_activities_;
  // Issued by the code and not yet seen in history, in the order issued.
  std::list<std::shared_ptr<CommandMachine>> commands_;
  // Lists, not deques: an empty std::deque allocates ~600 bytes, and a
  // parked workflow's memory is what the cache bound is about.
  std::list<std::coroutine_handle<>> ready_;
  // Work history has recorded, until its outcome arrives (a canceled one
  // stays until then too, so the late outcome is recognized): activities,
  // children and requests to other workflows by their scheduled or
  // initiated event id, timers by timer id.
  std::map<int64_t, std::shared_ptr<FutureMachine>> by_event_id_;
  std::map<std::string, std::shared_ptr<FutureMachine>, std::less<>> timers_;
  // Shared with its waits; released first on destruction, so a wait dropped
  // then gives nothing back to a half-destroyed instance.
  std::shared_ptr<SignalInbox> signals_ = std::make_shared<SignalInbox>(*this);
  uint64_t resolutions_ = 0;  // futures made ready so far: their history order, for any()
  std::map<std::string, std::function<v1::Payloads()>> query_handlers_;
  RecordedMarkers recorded_markers_;
  std::map<std::string, bool> patch_decisions_;
  WorkflowInfo info_;
  detail::Blobs* blobs_ = nullptr;
  detail::FrameAccount frames_;  // charged by the coroutines this workflow allocates
  // Seeded from the first run's id when the started event is applied; the
  // 2.5 KB generator is made when the code first draws.
  uint64_t random_seed_ = 0;
  std::unique_ptr<std::mt19937_64> random_;
};

}  // namespace reprise::worker
