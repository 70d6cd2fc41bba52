// Histories the real engine wrote (tests/worker/histories/, made by
// record_histories.cpp), cut where a workflow task would carry them, and
// the check that replay reproduces every command the engine recorded.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "reprise/codec.hpp"
#include "reprise/detail/workflow_starter.hpp"
#include "reprise/history_file.hpp"
#include "reprise/v1/command.pb.h"
#include "reprise/v1/history.pb.h"
#include "worker/workflow_instance.hpp"

#ifndef REPRISE_RECORDED_HISTORIES
#error "REPRISE_RECORDED_HISTORIES must name tests/worker/histories (tests/meson.build)"
#endif

namespace reprise::recorded {

// tests/worker/histories/<name>.json.
inline v1::History history(const std::string& name) {
  return read_history_file(std::string(REPRISE_RECORDED_HISTORIES) + "/" + name + ".json");
}

// The result the run completed with, as a string ("" and a test failure
// when it did not complete).
inline std::string completed_result(const v1::History& h) {
  const v1::HistoryEvent& last = h.events(h.events_size() - 1);
  if (!last.has_workflow_execution_completed()) {
    ADD_FAILURE() << "the run ended with " << v1::EventType_Name(last.event_type());
    return "";
  }
  return from_payload<std::string>(last.workflow_execution_completed().result().payloads(0), "the result");
}

// Its events after event `last`: what a cached instance is fed next.
inline v1::History events_after(const v1::History& h, int64_t last) {
  v1::History out;
  for (const auto& e : h.events()) {
    if (e.event_id() > last) *out.add_events() = e;
  }
  return out;
}

// How many workflow tasks the history started.
inline int tasks_in(const v1::History& h) {
  int n = 0;
  for (const auto& e : h.events()) n += e.has_workflow_task_started() ? 1 : 0;
  return n;
}

// What workflow task `n` (from 1) carried: the events through its
// WorkflowTaskStarted.
inline v1::History through_task(const v1::History& h, int n) {
  v1::History out;
  for (const auto& e : h.events()) {
    *out.add_events() = e;
    if (e.has_workflow_task_started() && --n == 0) return out;
  }
  ADD_FAILURE() << "the history has fewer tasks than asked for";
  return out;
}

inline bool made_by_a_command(const v1::HistoryEvent& e) {
  return e.has_activity_task_scheduled() || e.has_timer_started() || e.has_timer_canceled() ||
         e.has_activity_task_cancel_requested() || e.has_workflow_execution_completed() ||
         e.has_workflow_execution_failed() || e.has_workflow_execution_canceled() ||
         e.has_workflow_execution_continued_as_new() || e.has_marker_recorded() ||
         e.has_start_child_workflow_execution_initiated() || e.has_signal_external_workflow_execution_initiated() ||
         e.has_request_cancel_external_workflow_execution_initiated();
}

// The events the engine wrote for the commands of workflow task `n`: those
// after its WorkflowTaskCompleted, up to the next workflow task, less what
// the engine wrote in the same step on its own (an ActivityTaskCanceled
// right after the cancel request of an activity no worker had started).
inline bool is_workflow_task_event(const v1::HistoryEvent& e) {
  return e.has_workflow_task_scheduled() || e.has_workflow_task_started() || e.has_workflow_task_completed() ||
         e.has_workflow_task_failed() || e.has_workflow_task_timed_out();
}
inline std::vector<v1::HistoryEvent> recorded_commands(const v1::History& h, int n) {
  std::vector<v1::HistoryEvent> out;
  bool in_task = false;
  for (const auto& e : h.events()) {
    if (in_task) {
      if (is_workflow_task_event(e)) break;
      if (made_by_a_command(e)) out.push_back(e);
    } else if (e.has_workflow_task_completed() && --n == 0) {
      in_task = true;
    }
  }
  return out;
}

// Each command against the event the engine wrote for it.
inline void expect_same(const std::vector<v1::Command>& commands, const std::vector<v1::HistoryEvent>& events,
                        const std::string& where) {
  ASSERT_EQ(commands.size(), events.size()) << where << ": as many commands as the engine recorded";
  for (size_t i = 0; i < commands.size(); ++i) {
    const v1::Command& c = commands[i];
    const v1::HistoryEvent& e = events[i];
    SCOPED_TRACE(where + ", command " + std::to_string(i + 1) + " " + v1::CommandType_Name(c.command_type()) +
                 " against event " + std::to_string(e.event_id()) + " " + v1::EventType_Name(e.event_type()));
    if (c.has_schedule_activity_task()) {
      ASSERT_TRUE(e.has_activity_task_scheduled());
      EXPECT_EQ(c.schedule_activity_task().activity_id(), e.activity_task_scheduled().activity_id());
      EXPECT_EQ(c.schedule_activity_task().activity_type().name(), e.activity_task_scheduled().activity_type().name());
      EXPECT_EQ(c.schedule_activity_task().input().SerializeAsString(),
                e.activity_task_scheduled().input().SerializeAsString());
    } else if (c.has_start_timer()) {
      ASSERT_TRUE(e.has_timer_started());
      EXPECT_EQ(c.start_timer().timer_id(), e.timer_started().timer_id());
      EXPECT_EQ(c.start_timer().start_to_fire_timeout().SerializeAsString(),
                e.timer_started().start_to_fire_timeout().SerializeAsString());
    } else if (c.has_cancel_timer()) {
      ASSERT_TRUE(e.has_timer_canceled());
      EXPECT_EQ(c.cancel_timer().timer_id(), e.timer_canceled().timer_id());
    } else if (c.has_request_cancel_activity_task()) {
      ASSERT_TRUE(e.has_activity_task_cancel_requested());
      EXPECT_EQ(c.request_cancel_activity_task().scheduled_event_id(),
                e.activity_task_cancel_requested().scheduled_event_id());
    } else if (c.has_complete_workflow_execution()) {
      ASSERT_TRUE(e.has_workflow_execution_completed());
      EXPECT_EQ(c.complete_workflow_execution().result().SerializeAsString(),
                e.workflow_execution_completed().result().SerializeAsString());
    } else if (c.has_fail_workflow_execution()) {
      ASSERT_TRUE(e.has_workflow_execution_failed());
      EXPECT_EQ(c.fail_workflow_execution().failure().message(), e.workflow_execution_failed().failure().message());
      EXPECT_EQ(c.fail_workflow_execution().failure().type(), e.workflow_execution_failed().failure().type());
    } else if (c.has_cancel_workflow_execution()) {
      ASSERT_TRUE(e.has_workflow_execution_canceled());
    } else if (c.has_continue_as_new_workflow_execution()) {
      ASSERT_TRUE(e.has_workflow_execution_continued_as_new());
      EXPECT_EQ(c.continue_as_new_workflow_execution().input().SerializeAsString(),
                e.workflow_execution_continued_as_new().input().SerializeAsString());
    } else if (c.has_record_marker()) {
      ASSERT_TRUE(e.has_marker_recorded());
      EXPECT_EQ(c.record_marker().marker_name(), e.marker_recorded().marker_name());
      EXPECT_EQ(c.record_marker().details().size(), e.marker_recorded().details().size());
      for (const auto& [key, value] : c.record_marker().details()) {
        ASSERT_TRUE(e.marker_recorded().details().contains(key)) << key;
        EXPECT_EQ(value.SerializeAsString(), e.marker_recorded().details().at(key).SerializeAsString()) << key;
      }
    } else if (c.has_start_child_workflow_execution()) {
      ASSERT_TRUE(e.has_start_child_workflow_execution_initiated());
      EXPECT_EQ(c.start_child_workflow_execution().workflow_id(),
                e.start_child_workflow_execution_initiated().workflow_id());
      EXPECT_EQ(c.start_child_workflow_execution().workflow_type().name(),
                e.start_child_workflow_execution_initiated().workflow_type().name());
      EXPECT_EQ(c.start_child_workflow_execution().input().SerializeAsString(),
                e.start_child_workflow_execution_initiated().input().SerializeAsString());
    } else if (c.has_signal_external_workflow_execution()) {
      ASSERT_TRUE(e.has_signal_external_workflow_execution_initiated());
      const auto& sent = c.signal_external_workflow_execution();
      const auto& recorded = e.signal_external_workflow_execution_initiated();
      EXPECT_EQ(sent.execution().workflow_id(), recorded.workflow_execution().workflow_id());
      EXPECT_EQ(sent.signal_name(), recorded.signal_name());
      EXPECT_EQ(sent.input().SerializeAsString(), recorded.input().SerializeAsString());
      EXPECT_EQ(sent.child_workflow_only(), recorded.child_workflow_only());
    } else if (c.has_request_cancel_external_workflow_execution()) {
      ASSERT_TRUE(e.has_request_cancel_external_workflow_execution_initiated());
      const auto& sent = c.request_cancel_external_workflow_execution();
      const auto& recorded = e.request_cancel_external_workflow_execution_initiated();
      EXPECT_EQ(sent.execution().workflow_id(), recorded.workflow_execution().workflow_id());
      EXPECT_EQ(sent.child_workflow_only(), recorded.child_workflow_only());
    } else {
      ADD_FAILURE() << "no comparison for this command yet: add one";
    }
  }
}

// Replays `h` (of workflow `workflow_id`, which the history does not name)
// as workers would see it: a fresh instance for each task (a
// cache miss: the whole history up to the task), and one instance fed each
// task's new events in turn (a sticky worker). Each must issue, for every
// task, the commands the engine recorded for it.
inline void expect_replays_as_recorded(const v1::History& h, const std::string& workflow_id,
                                       const std::string& workflow_type, const worker::WorkflowStarter& starter) {
  const std::string run_id = h.events(0).workflow_execution_started().original_execution_run_id();
  worker::WorkflowInstance sticky(workflow_type, starter);
  sticky.set_execution(workflow_id, run_id);
  const int tasks = tasks_in(h);
  ASSERT_GE(tasks, 1);
  for (int n = 1; n <= tasks; ++n) {
    const v1::History upto = through_task(h, n);
    worker::WorkflowInstance fresh(workflow_type, starter);
    fresh.set_execution(workflow_id, run_id);
    worker::ApplyResult replayed = fresh.apply(upto);
    ASSERT_TRUE(replayed.is_ok()) << "task " << n << ": " << replayed.status().to_string();
    expect_same(replayed->commands, recorded_commands(h, n), "task " + std::to_string(n) + " replayed from event 1");

    worker::ApplyResult applied = sticky.apply(events_after(upto, sticky.last_event_id()));
    ASSERT_TRUE(applied.is_ok()) << "task " << n << " on the cached instance: " << applied.status().to_string();
    expect_same(applied->commands, recorded_commands(h, n), "task " + std::to_string(n) + " on the cached instance");
  }
}

// The recorded history `name` (of workflow `id`), checked to replay as
// recorded by `def`'s code.
template <auto Fn>
v1::History replays_as_recorded(const WorkflowDef<Fn>& def, const std::string& id, const std::string& name) {
  const v1::History h = history(name);
  expect_replays_as_recorded(h, id, def.name, worker::make_starter<Fn>(def.name));
  return h;
}

// A fresh instance (the cache evicted) replays the whole closed history `h`
// of `def` to its end and issues nothing new.
template <auto Fn>
void expect_replays_to_the_end(const WorkflowDef<Fn>& def, const v1::History& h) {
  worker::WorkflowInstance replayed(def.name, worker::make_starter<Fn>(def.name));
  worker::ApplyResult r = replayed.apply(h);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(r->commands.empty());
  EXPECT_TRUE(replayed.finished());
}

}  // namespace reprise::recorded
