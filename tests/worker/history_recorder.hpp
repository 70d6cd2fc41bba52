// Recorder: builds the history the engine would write for a sequence of
// workflow tasks, so the replayer can be tested event by event.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "history/event_builder.hpp"
#include "reprise/v1/command.pb.h"
#include "reprise/v1/history.pb.h"

namespace reprise {

// Builds the history the engine would write for a workflow task sequence.
class Recorder {
 public:
  explicit Recorder(const v1::Payloads& input, const std::string& run_id = "run-1")
      : builder_(1, TimePoint(std::chrono::seconds(1'700'000'000))) {
    v1::HistoryEvent started;
    *started.mutable_workflow_execution_started()->mutable_input() = input;
    started.mutable_workflow_execution_started()->set_original_execution_run_id(run_id);
    builder_.append(started);
    task();
  }
  // WorkflowTaskScheduled, WorkflowTaskStarted.
  void task() {
    v1::HistoryEvent s;
    s.mutable_workflow_task_scheduled()->set_attempt(1);
    builder_.append(s);
    v1::HistoryEvent st;
    st.mutable_workflow_task_started();
    builder_.append(st);
  }
  // What the engine records when the task completes with `commands`.
  void completed(const std::vector<v1::Command>& commands) {
    v1::HistoryEvent done;
    done.mutable_workflow_task_completed();
    builder_.append(done);
    for (const auto& c : commands) {
      v1::HistoryEvent e;
      if (c.has_schedule_activity_task()) {
        auto* a = e.mutable_activity_task_scheduled();
        a->set_activity_id(c.schedule_activity_task().activity_id());
        *a->mutable_activity_type() = c.schedule_activity_task().activity_type();
        *a->mutable_input() = c.schedule_activity_task().input();
        last_activity_ = builder_.append(e).event_id();
      } else if (c.has_start_timer()) {
        e.mutable_timer_started()->set_timer_id(c.start_timer().timer_id());
        builder_.append(e);
        last_timer_ = c.start_timer().timer_id();
      } else if (c.has_complete_workflow_execution()) {
        *e.mutable_workflow_execution_completed()->mutable_result() = c.complete_workflow_execution().result();
        builder_.append(e);
      } else if (c.has_fail_workflow_execution()) {
        *e.mutable_workflow_execution_failed()->mutable_failure() = c.fail_workflow_execution().failure();
        builder_.append(e);
      } else if (c.has_cancel_workflow_execution()) {
        e.mutable_workflow_execution_canceled();
        builder_.append(e);
      } else if (c.has_continue_as_new_workflow_execution()) {
        *e.mutable_workflow_execution_continued_as_new()->mutable_input() =
            c.continue_as_new_workflow_execution().input();
        builder_.append(e);
      } else if (c.has_request_cancel_activity_task()) {
        e.mutable_activity_task_cancel_requested()->set_scheduled_event_id(
            c.request_cancel_activity_task().scheduled_event_id());
        builder_.append(e);
      } else if (c.has_cancel_timer()) {
        e.mutable_timer_canceled()->set_timer_id(c.cancel_timer().timer_id());
        builder_.append(e);
      } else if (c.has_start_child_workflow_execution()) {
        auto* a = e.mutable_start_child_workflow_execution_initiated();
        a->set_workflow_id(c.start_child_workflow_execution().workflow_id());
        *a->mutable_workflow_type() = c.start_child_workflow_execution().workflow_type();
        last_child_ = builder_.append(e).event_id();
      } else if (c.has_signal_external_workflow_execution()) {
        const auto& s = c.signal_external_workflow_execution();
        auto* a = e.mutable_signal_external_workflow_execution_initiated();
        *a->mutable_workflow_execution() = s.execution();
        a->set_signal_name(s.signal_name());
        *a->mutable_input() = s.input();
        a->set_child_workflow_only(s.child_workflow_only());
        externals_.push_back(builder_.append(e).event_id());
      } else if (c.has_request_cancel_external_workflow_execution()) {
        const auto& r = c.request_cancel_external_workflow_execution();
        auto* a = e.mutable_request_cancel_external_workflow_execution_initiated();
        *a->mutable_workflow_execution() = r.execution();
        a->set_child_workflow_only(r.child_workflow_only());
        a->set_reason(r.reason());
        externals_.push_back(builder_.append(e).event_id());
      } else if (c.has_record_marker()) {
        e.mutable_marker_recorded()->set_marker_name(c.record_marker().marker_name());
        *e.mutable_marker_recorded()->mutable_details() = c.record_marker().details();
        builder_.append(e);
      } else {
        ADD_FAILURE() << "the recorder does not know command " << v1::CommandType_Name(c.command_type());
      }
    }
  }
  void activity_completed(v1::Payload result) {
    v1::HistoryEvent e;
    e.mutable_activity_task_completed()->set_scheduled_event_id(last_activity_);
    *e.mutable_activity_task_completed()->mutable_result()->add_payloads() = std::move(result);
    builder_.append(e);
  }
  void activity_failed(const std::string& message) {
    v1::HistoryEvent e;
    e.mutable_activity_task_failed()->set_scheduled_event_id(last_activity_);
    e.mutable_activity_task_failed()->mutable_failure()->set_message(message);
    e.mutable_activity_task_failed()->mutable_failure()->set_type("CardDeclined");
    builder_.append(e);
  }
  // Completes the activity scheduled as event `scheduled`.
  void activity_completed_at(int64_t scheduled, v1::Payload result) {
    v1::HistoryEvent e;
    e.mutable_activity_task_completed()->set_scheduled_event_id(scheduled);
    *e.mutable_activity_task_completed()->mutable_result()->add_payloads() = std::move(result);
    builder_.append(e);
  }
  // Fails the activity scheduled as event `scheduled`.
  void activity_failed_at(int64_t scheduled, const std::string& message) {
    v1::HistoryEvent e;
    e.mutable_activity_task_failed()->set_scheduled_event_id(scheduled);
    e.mutable_activity_task_failed()->mutable_failure()->set_message(message);
    builder_.append(e);
  }
  void timer_fired() { timer_fired(last_timer_); }
  void timer_fired(const std::string& timer_id) {
    v1::HistoryEvent e;
    e.mutable_timer_fired()->set_timer_id(timer_id);
    builder_.append(e);
  }
  void cancel_requested() {
    v1::HistoryEvent e;
    e.mutable_workflow_execution_cancel_requested()->set_cause("test");
    builder_.append(e);
  }
  void activity_canceled_at(int64_t scheduled) {
    v1::HistoryEvent e;
    e.mutable_activity_task_canceled()->set_scheduled_event_id(scheduled);
    builder_.append(e);
  }
  void child_started() {
    v1::HistoryEvent e;
    e.mutable_child_workflow_execution_started()->set_initiated_event_id(last_child_);
    builder_.append(e);
  }
  void child_completed(v1::Payload result) {
    v1::HistoryEvent e;
    e.mutable_child_workflow_execution_completed()->set_initiated_event_id(last_child_);
    *e.mutable_child_workflow_execution_completed()->mutable_result()->add_payloads() = std::move(result);
    builder_.append(e);
  }
  void child_failed(const std::string& message, const std::string& type) {
    v1::HistoryEvent e;
    auto* f = e.mutable_child_workflow_execution_failed();
    f->set_initiated_event_id(last_child_);
    f->mutable_failure()->set_message(message);
    f->mutable_failure()->set_type(type);
    builder_.append(e);
  }
  void child_canceled() {
    v1::HistoryEvent e;
    e.mutable_child_workflow_execution_canceled()->set_initiated_event_id(last_child_);
    builder_.append(e);
  }
  void child_terminated() {
    v1::HistoryEvent e;
    e.mutable_child_workflow_execution_terminated()->set_initiated_event_id(last_child_);
    builder_.append(e);
  }
  void child_timed_out() {
    v1::HistoryEvent e;
    e.mutable_child_workflow_execution_timed_out()->set_initiated_event_id(last_child_);
    e.mutable_child_workflow_execution_timed_out()->set_timeout_type(v1::TIMEOUT_TYPE_START_TO_CLOSE);
    builder_.append(e);
  }
  void signaled(const std::string& name, v1::Payload value) {
    v1::HistoryEvent e;
    e.mutable_workflow_execution_signaled()->set_signal_name(name);
    *e.mutable_workflow_execution_signaled()->mutable_input()->add_payloads() = std::move(value);
    builder_.append(e);
  }
  // The outcome of the oldest signal or cancel request to another workflow
  // still waiting for one: delivered (cause UNSPECIFIED) or failed.
  void external_outcome(v1::ExternalFailureCause cause = v1::EXTERNAL_FAILURE_CAUSE_UNSPECIFIED) {
    ASSERT_FALSE(externals_.empty()) << "no request to another workflow is waiting for its outcome";
    const int64_t initiated = externals_.front();
    externals_.erase(externals_.begin());
    v1::HistoryEvent e;
    for (const auto& recorded : builder_.events()) {
      if (recorded.event_id() != initiated) continue;
      const bool signal = recorded.has_signal_external_workflow_execution_initiated();
      const v1::WorkflowExecution target =
          signal ? recorded.signal_external_workflow_execution_initiated().workflow_execution()
                 : recorded.request_cancel_external_workflow_execution_initiated().workflow_execution();
      if (signal && cause == v1::EXTERNAL_FAILURE_CAUSE_UNSPECIFIED) {
        *e.mutable_external_workflow_execution_signaled()->mutable_workflow_execution() = target;
        e.mutable_external_workflow_execution_signaled()->set_initiated_event_id(initiated);
      } else if (signal) {
        *e.mutable_signal_external_workflow_execution_failed()->mutable_workflow_execution() = target;
        e.mutable_signal_external_workflow_execution_failed()->set_initiated_event_id(initiated);
        e.mutable_signal_external_workflow_execution_failed()->set_cause(cause);
      } else if (cause == v1::EXTERNAL_FAILURE_CAUSE_UNSPECIFIED) {
        *e.mutable_external_workflow_execution_cancel_requested()->mutable_workflow_execution() = target;
        e.mutable_external_workflow_execution_cancel_requested()->set_initiated_event_id(initiated);
      } else {
        *e.mutable_request_cancel_external_workflow_execution_failed()->mutable_workflow_execution() = target;
        e.mutable_request_cancel_external_workflow_execution_failed()->set_initiated_event_id(initiated);
        e.mutable_request_cancel_external_workflow_execution_failed()->set_cause(cause);
      }
    }
    builder_.append(e);
  }
  int64_t last_activity() const { return last_activity_; }
  // The events from `first_event_id` on: what a sticky task carries.
  v1::History history_from(int64_t first_event_id) const {
    v1::History h;
    for (const auto& e : builder_.events()) {
      if (e.event_id() >= first_event_id) *h.add_events() = e;
    }
    return h;
  }
  v1::History history() const {
    v1::History h;
    for (const auto& e : builder_.events()) *h.add_events() = e;
    return h;
  }

 private:
  history::HistoryBuilder builder_;
  int64_t last_activity_ = 0;
  std::string last_timer_;
  int64_t last_child_ = 0;
  std::vector<int64_t> externals_;  // initiated events waiting for their outcome, oldest first
};

// Records `steps` rounds of a workflow that sleeps once per round, running
// the workflow live round by round (as a sticky worker would): 5 events a
// round, so 2,000 rounds make a 10,000-event history.
template <typename Instance>
Recorder record_sleeper(Instance& live, int steps) {
  Recorder rec(v1::Payloads{});
  for (int i = 0; i <= steps; ++i) {
    auto r = live.apply(rec.history_from(live.last_event_id() + 1));
    if (!r.is_ok()) {
      ADD_FAILURE() << r.status().to_string();
      break;
    }
    rec.completed(r->commands);
    if (i < steps) {
      rec.timer_fired();
      rec.task();
    }
  }
  return rec;
}

}  // namespace reprise
