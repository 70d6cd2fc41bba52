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

#include "history/clock.hpp"
#include "reprise/v1/command.pb.h"
#include "reprise/v1/common.pb.h"

namespace reprise {

// Where a workflow is and how big it has grown, as of its current task.
struct WorkflowInfo {
  std::string workflow_id;
  std::string run_id;
  std::string workflow_type;
  int attempt = 1;             // of the current workflow task
  int64_t history_length = 0;  // events, including the current task's started event
  int64_t history_size_bytes = 0;
  bool continue_as_new_suggested = false;  // history is past the warning limits
};

}  // namespace reprise

namespace reprise::detail {

// The result of a command that completes later (an activity, a timer): set
// by the runtime when the event that resolves it is applied; the coroutine
// awaiting it is then resumed in deterministic order.
struct Pending {
  bool ready = false;
  v1::Payloads result;
  std::optional<v1::Failure> failure;
  std::coroutine_handle<> waiter;
  std::string name;  // for messages: the activity type or timer id
};

class WorkflowCore {
 public:
  virtual ~WorkflowCore() = default;
  virtual std::shared_ptr<Pending> schedule_activity(v1::ScheduleActivityTaskCommandAttributes attributes) = 0;
  virtual std::shared_ptr<Pending> start_timer(std::chrono::nanoseconds duration) = 0;
  // The next value of signal `name`: one already received and not yet taken,
  // or the next to arrive. Signals are delivered in history order, none lost.
  virtual std::shared_ptr<Pending> next_signal(const std::string& name) = 0;
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
