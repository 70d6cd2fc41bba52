// What record_histories.cpp and its per-test recorders (recorded/*.cpp) share:
// an engine embedded in a TestEnvironment, and two ways to drive it.
//
// - worker(): a real Worker runs the workflows as it would in production.
// - By hand, one step at a time, where a test needs events in a given
//   order (a timer and a signal in one task, one activity finishing before
//   another): workflow_task() is a worker with no cache (a fresh instance
//   replays the whole history and its commands complete the task),
//   activity_tasks() and complete()/fail()/canceled() are an activity
//   worker, fire_timers() moves the clock (time skipping is off by default)
//   and waits for the timers it made due.
//
// Either way the history saved is what the engine wrote.
#pragma once

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "reprise/client.hpp"
#include "reprise/history_file.hpp"
#include "reprise/testing.hpp"
#include "reprise/v1/service.pb.h"
#include "reprise/worker.hpp"
#include "reprise/workflow.hpp"
#include "worker/workflow_instance.hpp"

namespace reprise::recorded {

inline void require(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

// Whether a task's commands close the run with a result.
inline bool completes(const std::vector<v1::Command>& commands) {
  return !commands.empty() && commands.back().has_complete_workflow_execution();
}

// Waits (in real time) until the history of `id` has an event `has`.
template <typename Has>
void wait_for_event(Connection& connection, const std::string& id, Has has) {
  for (int i = 0; i < 1000; ++i) {
    const v1::History history = fetch_history(connection, id);
    for (const v1::HistoryEvent& e : history.events()) {
      if (has(e)) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error("the history of " + id + " never got the event waited for");
}

// A workflow that waits for a signal nobody sends: a target for requests
// from other workflows, there and not their child.
inline constexpr Signal<std::string> never_sent{"never"};
inline Workflow<std::string> bystander(WorkflowContext& ctx) { co_return co_await ctx.wait(never_sent); }
inline constexpr WorkflowDef<&bystander> bystander_wf{"bystander"};

class Recording {
 public:
  explicit Recording(std::filesystem::path dir, testing::TestEnvironmentOptions options = {.time_skipping = false})
      : dir_(std::move(dir)), env_(options), client_(env_.connection()) {}
  testing::TestEnvironment& env() { return env_; }
  Client& client() { return client_; }
  Connection& connection() { return *env_.connection(); }

  // A real worker on `queue` with `workflows` and `activities` registered.
  template <typename... Defs>
  std::unique_ptr<Worker> worker(const std::string& queue, const Defs&... defs) {
    auto w = std::make_unique<Worker>(env_.connection(), WorkerOptions{.task_queue = queue, .identity = "recorder"});
    (register_in(*w, defs), ...);
    w->start();
    return w;
  }

  // --- by hand ---

  // Workflows workflow_task() can run, by their type name.
  template <auto Fn>
  void can_run(const WorkflowDef<Fn>& def) {
    starters_[def.name] = std::make_shared<const worker::WorkflowStarter>(worker::make_starter<Fn>(def.name));
  }
  // Starts `def` as `id` on `queue` with `args`, to be run by workflow_task().
  template <auto Fn, typename... Args>
  void start(const WorkflowDef<Fn>& def, const std::string& id, const std::string& queue, const Args&... args) {
    can_run(def);
    client_.start(def, {.id = id, .task_queue = queue}, args...);
  }
  // Starts a bystander as `id`, on a queue nobody works.
  void start_bystander(const std::string& id) { client_.start(bystander_wf, {.id = id, .task_queue = "bystanders"}); }
  // Takes the next workflow task of `queue` and answers it with the
  // commands a fresh instance issues after replaying the whole history.
  std::vector<v1::Command> workflow_task(const std::string& queue) { return answer(take_workflow_task(queue)); }
  // The two halves of workflow_task(), for a recorder that acts while a
  // task runs or takes it on another thread. An empty poll ends after the
  // embedded engine's poll timeout (2 s); a task that waits for the engine's
  // own work (a timer, a delivery to another workflow) may take that long.
  v1::PollWorkflowTaskResponse take_workflow_task(const std::string& queue) {
    v1::PollWorkflowTaskRequest poll;
    poll.mutable_task_queue()->set_name(queue);
    poll.set_identity("recorder");
    v1::PollWorkflowTaskResponse task;
    for (int tries = 0; tries < 10 && task.task_token().empty(); ++tries) task = connection().poll_workflow_task(poll);
    require(!task.task_token().empty(), "no workflow task came on " + queue);
    require(task.next_page_token().empty(), "a history longer than one page: read the rest first");
    return task;
  }
  std::vector<v1::Command> answer(const v1::PollWorkflowTaskResponse& task) {
    worker::ApplyResult r = replay(task);
    require(r.is_ok(), task.workflow_execution().workflow_id() + ": " + r.status().to_string());
    v1::CompleteWorkflowTaskRequest done;
    done.set_task_token(task.task_token());
    done.set_identity("recorder");
    for (const v1::Command& c : r->commands) *done.add_commands() = c;
    connection().complete_workflow_task(done);
    return r->commands;
  }
  // Answers the workflow tasks of `queue` (a parent's and its children's,
  // in whatever order the engine hands them out) until `workflow_id` closes.
  void workflow_tasks_until_closed(const std::string& queue, const std::string& workflow_id) {
    for (int i = 0; i < 100; ++i) {
      const v1::History h = fetch_history(connection(), workflow_id);
      const v1::HistoryEvent& last = h.events(h.events_size() - 1);
      if (last.has_workflow_execution_completed() || last.has_workflow_execution_failed() ||
          last.has_workflow_execution_canceled()) {
        return;
      }
      workflow_task(queue);
    }
    throw std::runtime_error(workflow_id + " did not close");
  }
  // Takes the next workflow task of `queue`, whose code fails (a bug), and
  // fails the task as a worker with the default panic policy does.
  void failing_workflow_task(const std::string& queue) {
    const v1::PollWorkflowTaskResponse task = take_workflow_task(queue);
    worker::ApplyResult r = replay(task);
    require(!r.is_ok() && !r.nondeterministic(), task.workflow_execution().workflow_id() + ": the code did not fail");
    v1::FailWorkflowTaskRequest failed;
    failed.set_task_token(task.task_token());
    failed.set_cause(v1::WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_CODE_ERROR);
    failed.mutable_failure()->set_message(r.status().message());
    failed.set_identity("recorder");
    connection().fail_workflow_task(failed);
  }
  // Takes `n` activity tasks of `queue`, by activity id.
  std::map<std::string, v1::PollActivityTaskResponse> activity_tasks(const std::string& queue, int n) {
    std::map<std::string, v1::PollActivityTaskResponse> out;
    for (int i = 0; i < n; ++i) {
      v1::PollActivityTaskRequest poll;
      poll.mutable_task_queue()->set_name(queue);
      poll.set_identity("recorder");
      v1::PollActivityTaskResponse task;
      for (int tries = 0; tries < 10 && task.task_token().empty(); ++tries)
        task = connection().poll_activity_task(poll);
      require(!task.task_token().empty(), "no activity task came on " + queue);
      out[task.activity_id()] = std::move(task);
    }
    return out;
  }
  void complete(const v1::PollActivityTaskResponse& task, const v1::Payload& result) {
    v1::CompleteActivityRequest r;
    r.set_task_token(task.task_token());
    *r.mutable_result()->add_payloads() = result;
    r.set_identity("recorder");
    connection().complete_activity(r);
  }
  // Fails it for good (non-retryable), so the engine records the failure.
  void fail(const v1::PollActivityTaskResponse& task, const std::string& message, const std::string& type) {
    v1::FailActivityRequest r;
    r.set_task_token(task.task_token());
    r.mutable_failure()->set_message(message);
    r.mutable_failure()->set_type(type);
    r.mutable_failure()->set_non_retryable(true);
    r.set_identity("recorder");
    connection().fail_activity(r);
  }
  void canceled(const v1::PollActivityTaskResponse& task) {
    v1::ReportActivityCanceledRequest r;
    r.set_task_token(task.task_token());
    r.set_identity("recorder");
    connection().report_activity_canceled(r);
  }
  // Moves the clock by `by` and waits until `workflow_id`'s history has
  // `fired` timers fired in all.
  void fire_timers(const std::string& workflow_id, std::chrono::nanoseconds by, int fired = 1) {
    env_.advance(by);
    wait_for_event(connection(), workflow_id, [&, seen = 0](const v1::HistoryEvent& e) mutable {
      if (e.event_id() == 1) seen = 0;  // each look reads the history from the start
      return e.has_timer_fired() && ++seen == fired;
    });
  }

  // Writes the history of `workflow_id` (its current run, or `run_id`) as
  // <dir>/<name>.json.
  void save(const std::string& workflow_id, const std::string& name, const std::string& run_id = "") {
    const std::string path = (dir_ / (name + ".json")).string();
    client_.export_history(workflow_id, path, HistoryFormat::kJson, run_id);
    std::printf("%s: %d events\n", path.c_str(), fetch_history(connection(), workflow_id, run_id).events_size());
  }

 private:
  worker::ApplyResult replay(const v1::PollWorkflowTaskResponse& task) {
    const auto starter = starters_.find(task.workflow_type().name());
    require(starter != starters_.end(), "no workflow '" + task.workflow_type().name() + "' to run: can_run() it");
    worker::WorkflowInstance instance(task.workflow_type().name(), starter->second);
    instance.set_execution(task.workflow_execution().workflow_id(), task.workflow_execution().run_id());
    return instance.apply(task.history());
  }

  template <auto Fn>
  static void register_in(Worker& w, const WorkflowDef<Fn>& def) {
    w.register_workflow(def);
  }
  template <auto Fn>
  static void register_in(Worker& w, const Activity<Fn>& def) {
    w.register_activity(def);
  }

  std::filesystem::path dir_;
  testing::TestEnvironment env_;
  Client client_;
  std::map<std::string, std::shared_ptr<const worker::WorkflowStarter>> starters_;
};

}  // namespace reprise::recorded
