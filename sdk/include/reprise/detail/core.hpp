// What a WorkflowContext asks of the runtime that hosts the workflow (the
// worker's WorkflowInstance). Private to the SDK and the worker.
#pragma once

#include <chrono>
#include <coroutine>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reprise/clock.hpp"
#include "reprise/export.hpp"
#include "reprise/v1/command.pb.h"
#include "reprise/v1/common.pb.h"

namespace reprise {

// Where a workflow is and how big it has grown, as of its current task.
struct WorkflowInfo {
  std::string workflow_id;
  std::string run_id;
  std::string workflow_type;
  // Of this run in its retry chain: 1, or n when the workflow's retry policy
  // started it after n - 1 failed runs (Temporal's Info.Attempt). The same
  // on replay; continue-as-new starts again at 1.
  int attempt = 1;
  int workflow_task_attempt = 1;  // of the current workflow task
  int64_t history_length = 0;     // events, including the current task's started event
  int64_t history_size_bytes = 0;
  bool continue_as_new_suggested = false;  // history is past the warning limits
};

}  // namespace reprise

namespace reprise::detail {

class WorkflowCore;

// The result of something that completes later (an activity, a timer, a
// signal, a child workflow, a request to another workflow, a branch): set by
// the runtime when the event that resolves it is applied; every coroutine
// awaiting it is then resumed, in the order they began to wait.
struct Pending {
  enum class Kind { kActivity, kTimer, kSignal, kChild, kExternal, kBranch };
  Kind kind = Kind::kActivity;
  bool ready = false;
  bool canceled = false;     // resolved by cancellation, not by its event
  bool cancellable = true;   // false when issued through ctx.non_cancellable()
  bool value_taken = false;  // the code read the result (a signal's unread value goes back)
  // When it became ready, counted per workflow: history order, for any().
  uint64_t resolved_order = 0;
  v1::Payloads result;
  std::optional<v1::Failure> failure;
  std::vector<std::coroutine_handle<>> waiters;  // in the order they suspended
  // For messages: activity type, timer id, signal name, child workflow id,
  // "signal 'ping' to workflow 'order-7'" / "cancel request to workflow 'order-7'".
  std::string name;
  int64_t event_id = 0;          // the event that recorded the command (scheduled, started, initiated)
  WorkflowCore* core = nullptr;  // where cancel() goes
};

class REPRISE_EXPORT WorkflowCore {
 public:
  virtual ~WorkflowCore() = default;
  // Each returns the pending result of a command it issues. When the
  // workflow has been asked to cancel, `cancellable` work is not issued and
  // comes back canceled.
  virtual std::shared_ptr<Pending> schedule_activity(v1::ScheduleActivityTaskCommandAttributes attributes,
                                                     bool cancellable) = 0;
  // A local activity: run by the worker within the workflow task, its
  // outcome recorded as a marker (on replay, read back from the marker).
  virtual std::shared_ptr<Pending> schedule_local_activity(v1::ScheduleActivityTaskCommandAttributes attributes,
                                                           bool cancellable) = 0;
  virtual std::shared_ptr<Pending> start_timer(std::chrono::nanoseconds duration, bool cancellable) = 0;
  virtual std::shared_ptr<Pending> start_child(v1::StartChildWorkflowExecutionCommandAttributes attributes,
                                               bool cancellable) = 0;
  // A signal to another workflow, or a request that it cancel: resolved when
  // history records that the target took it, failed when it records why not.
  virtual std::shared_ptr<Pending> signal_external(v1::SignalExternalWorkflowExecutionCommandAttributes attributes,
                                                   bool cancellable) = 0;
  virtual std::shared_ptr<Pending> cancel_external(
      v1::RequestCancelExternalWorkflowExecutionCommandAttributes attributes, bool cancellable) = 0;
  // The next value of signal `name`: one already received and not yet taken,
  // or the next to arrive. Signals are delivered in history order, none lost.
  virtual std::shared_ptr<Pending> next_signal(const std::string& name, bool cancellable) = 0;
  // Cancels what `pending` waits for and resolves it as canceled.
  virtual void cancel(const std::shared_ptr<Pending>& pending) = 0;
  // Makes `pending` ready and its waiter runnable (a branch finishing).
  virtual void resolve(const std::shared_ptr<Pending>& pending) = 0;
  // Takes ownership of a branch coroutine and runs it in this activation.
  virtual void spawn(std::coroutine_handle<> branch) = 0;
  // Ends this run and starts a new one of the same workflow id; the calling
  // coroutine never resumes.
  virtual void continue_as_new(v1::ContinueAsNewWorkflowExecutionCommandAttributes attributes) = 0;
  // The value `compute` gave when this side effect first ran (recorded in
  // history), or computes and records it now.
  virtual v1::Payloads side_effect(const std::function<v1::Payloads()>& compute) = 0;
  // Whether this execution runs the code after change `id`: true when run
  // for the first time or when history recorded the change, false when it
  // replays a history from before the change. The same for the whole run.
  virtual bool patched(const std::string& id) = 0;
  virtual bool cancel_requested() const = 0;
  // A claim-check payload's bytes, fetched when the code reads the value.
  virtual v1::Payload load_payload(const v1::Payload& claim_check) = 0;
  // Answers query `name` from now on (replacing an earlier handler).
  virtual void set_query_handler(const std::string& name, std::function<v1::Payloads()> handler) = 0;
  // The next number of the workflow's own random sequence, seeded from its
  // first run's id: the same on every replay.
  virtual uint64_t next_random() = 0;
  // Workflow time: the start time of the workflow task being processed.
  virtual TimePoint now() const = 0;
  virtual bool replaying() const = 0;
  virtual const WorkflowInfo& info() const = 0;
};

}  // namespace reprise::detail
