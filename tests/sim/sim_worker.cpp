#include "sim_worker.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "generated_workflow.hpp"
#include "reprise/detail/blobs.hpp"
#include "reprise/errors.hpp"

namespace reprise::sim {

namespace {

constexpr Duration kPollBackoff = std::chrono::milliseconds(200);  // as Worker's poll loops
constexpr Duration kLeaseRecheck = std::chrono::milliseconds(10);
// How often a fiber waiting for a local activity (or its backoff) looks again.
constexpr Duration kLocalActivityRecheck = std::chrono::milliseconds(50);

std::chrono::steady_clock::time_point steady(Duration virtual_now) {
  return std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(virtual_now));
}

}  // namespace

// The simulated worker's eager activity slots: Worker's EagerSlots, with
// a count of free slots in place of a thread pool's free threads. A task
// the server started here runs on a fiber of its own.
class SimWorker::EagerSlots final : public worker::EagerActivities {
 public:
  EagerSlots(SimWorker& worker, Incarnation& live, std::string identity, int slots)
      : worker_(worker), live_(live), identity_(std::move(identity)), free_(slots) {}
  bool reserve(const std::string& type) override {
    if (type != flaky_activity.name && type != cleanup_activity.name && type != progress_activity.name &&
        type != stall_activity.name) {
      return false;
    }
    if (free_ == 0) return false;
    --free_;
    return true;
  }
  void run(v1::PollActivityTaskResponse task) override {
    ++worker_.eager_started_;
    worker_.spawn("eager-act " + identity_, [this, task = std::move(task)] {
      worker_.run_activity(live_, task);
      ++free_;
    });
  }
  void release() override { ++free_; }

 private:
  SimWorker& worker_;
  Incarnation& live_;
  const std::string identity_;
  int free_;
};

// One life of the worker process. Members are destroyed in reverse: the
// fibers first, whose unwinding still gives leases back to the cache.
struct SimWorker::Incarnation {
  Incarnation(Network& network, std::string who) : identity(std::move(who)), connection(network, identity) {}

  std::string identity;
  std::string sticky_queue;  // "": caching off
  SimConnection connection;
  detail::Blobs blobs{connection, detail::BlobOptions{}};
  std::unique_ptr<worker::StickyCache> cache;
  std::unique_ptr<EagerSlots> eager;  // null: the worker asks for none
  worker::LocalActivityExecutor::Function local_function;
  std::unique_ptr<worker::LocalActivityExecutor> local_activities;
  std::unique_ptr<worker::WorkflowTaskRunner> runner;
  uint64_t next_fiber = 0;
  std::map<uint64_t, std::shared_ptr<SimFiber>> fibers;
};

SimWorker::SimWorker(Scheduler& s, Network& network, const worker::WorkflowRegistry& workflows, int index, Shape shape,
                     const bool& stopped, ActivityLog& activity_log, bool verbose)
    : s_(s),
      network_(network),
      workflows_(workflows),
      index_(index),
      shape_(shape),
      stopped_(stopped),
      activity_log_(activity_log),
      verbose_(verbose) {}

SimWorker::~SimWorker() { crash(); }

void SimWorker::start() {
  crash();  // a process restarts from nothing
  ++generation_;
  live_ = std::make_unique<Incarnation>(network_, "w" + std::to_string(index_) + "." + std::to_string(generation_));
  Incarnation& live = *live_;
  live.cache = std::make_unique<worker::StickyCache>(shape_.cache_size, size_t{256} << 20);
  live.sticky_queue = shape_.cache_size > 0 ? "sim/" + live.identity : std::string();
  const std::string& sticky_queue = live.sticky_queue;
  live.connection.on_eager_request_delivered = [this] {
    if (on_eager_request_delivered) on_eager_request_delivered();
  };
  if (shape_.eager_slots > 0) live.eager = std::make_unique<EagerSlots>(*this, live, live.identity, shape_.eager_slots);
  live.local_function = [this](ActivityContext& ctx, const v1::Payloads& input) {
    return run_local_attempt(ctx, input);
  };
  live.local_activities = std::make_unique<worker::LocalActivityExecutor>(
      [&live](const std::string& type) { return type == local_activity.name ? &live.local_function : nullptr; },
      [this, who = live.identity](std::function<void()> job) { spawn("local-act " + who, std::move(job)); },
      &live.blobs,
      worker::SteppedTime{.now = [this] { return steady(s_.now()); },
                          .pause =
                              [this](std::chrono::steady_clock::time_point until) {
                                const Duration left = until - steady(s_.now());
                                SimFiber::current()->sleep(std::clamp(left, Duration(1), kLocalActivityRecheck),
                                                           "local activity wait");
                              }});
  live.connection.on_complete_workflow_task = [this](const v1::CompleteWorkflowTaskRequest& r) {
    if (r.force_create_new_workflow_task()) ++activity_log_.keep_alive_completions;
  };
  worker::WorkflowTaskOptions options{
      .identity = live.identity,
      .task_queue = "sim",
      .eager_activities = live.eager.get(),
      .local_activities = live.local_activities.get(),
      .sticky_queue = sticky_queue,
      .history_page_events = shape_.history_page_events,
      // The thread is the whole simulation: the fiber waits on the virtual clock instead.
      .wait_for_lease = [] { SimFiber::current()->sleep(kLeaseRecheck, "lease busy"); },
      .log =
          [verbose = verbose_, who = live.identity](const std::string& line) {
            if (verbose) std::fprintf(stderr, "%s: %s\n", who.c_str(), line.c_str());
          }};
  live.runner = std::make_unique<worker::WorkflowTaskRunner>(live.connection, workflows_, *live.cache, live.blobs,
                                                             std::move(options));
  for (int i = 0; i < shape_.workflow_pollers; ++i) {
    spawn("poll-wf " + live.identity, [this, &live] { workflow_poll_loop(live, "sim"); });
  }
  if (!sticky_queue.empty()) {
    spawn("poll-sticky " + live.identity, [this, &live, sticky_queue] { workflow_poll_loop(live, sticky_queue); });
  }
  for (int i = 0; i < shape_.activity_pollers; ++i) {
    spawn("poll-act " + live.identity, [this, &live] { activity_poll_loop(live); });
  }
}

void SimWorker::crash() { live_.reset(); }

std::string SimWorker::identity() const { return live_ ? live_->identity : std::string(); }

void SimWorker::run_eager_start(const std::string& identity, const v1::PollWorkflowTaskResponse& task) {
  if (!live_ || live_->identity != identity) return;
  Incarnation& live = *live_;
  spawn("eager-start " + identity, [this, &live, task] { run_eager_workflow_task(live, task); });
}

void SimWorker::spawn(const std::string& label, std::function<void()> body) {
  Incarnation& live = *live_;
  const uint64_t id = live.next_fiber++;
  auto fiber = std::make_shared<SimFiber>(s_, std::move(body), [&live, id] { live.fibers.erase(id); });
  live.fibers.emplace(id, fiber);
  fiber->start(label);
}

// As Worker::workflow_poll_loop, one task at a time per poller: a task
// the runner could not answer nor fail times out and comes back.
void SimWorker::workflow_poll_loop(Incarnation& live, const std::string& queue) {
  SimFiber& fiber = *SimFiber::current();
  while (!stopped_) {
    v1::PollWorkflowTaskRequest poll;
    poll.mutable_task_queue()->set_name(queue);
    poll.set_identity(live.identity);
    poll.set_maximum_page_size(shape_.history_page_events);
    v1::PollWorkflowTaskResponse task;
    try {
      task = live.connection.poll_workflow_task(poll);
    } catch (const RpcError&) {
      fiber.sleep(kPollBackoff, "poll backoff");
      continue;
    }
    if (task.task_token().empty()) continue;
    // The workflow code takes a while to run.
    fiber.sleep(s_.random_duration(Duration(0), std::chrono::milliseconds(50)), "decide");
    try {
      live.runner->run(task);
    } catch (const std::exception& e) {
      if (verbose_) std::fprintf(stderr, "%s: %s\n", live.identity.c_str(), e.what());
    }
  }
}

void SimWorker::activity_poll_loop(Incarnation& live) {
  SimFiber& fiber = *SimFiber::current();
  while (!stopped_) {
    v1::PollActivityTaskRequest poll;
    poll.mutable_task_queue()->set_name("sim");
    poll.set_identity(live.identity);
    v1::PollActivityTaskResponse task;
    try {
      task = live.connection.poll_activity_task(poll);
    } catch (const RpcError&) {
      fiber.sleep(kPollBackoff, "poll backoff");
      continue;
    }
    if (task.task_token().empty()) continue;
    run_activity(live, task);
  }
}

void SimWorker::run_activity(Incarnation& live, const v1::PollActivityTaskResponse& task) {
  SimFiber& fiber = *SimFiber::current();
  const std::string& type = task.activity_type().name();
  // The activity runs for a while; a worker crash meanwhile loses it.
  // A first attempt of flaky that draws under 200 ms is slow instead:
  // 13-15 s, past its 10 s start-to-close timeout, so it reports while the
  // retry (1 s backoff) runs, and that late outcome must be refused. The
  // stall activity runs 20 s, past its 5 s schedule-to-close timeout.
  // progress spends its time in its units (in the heartbeat below).
  Duration runs = s_.random_duration(Duration(0), std::chrono::seconds(2));
  if (task.attempt() == 1 && runs < std::chrono::milliseconds(200)) runs = std::chrono::seconds(13) + runs * 10;
  if (type == stall_activity.name) runs = std::chrono::seconds(20);
  if (type != progress_activity.name) fiber.sleep(runs, "activity " + task.activity_id());
  const ActivityInfo info{.workflow_id = task.workflow_execution().workflow_id(),
                          .run_id = task.workflow_execution().run_id(),
                          .activity_id = task.activity_id(),
                          .activity_type = type,
                          .attempt = task.attempt()};
  // A first attempt of progress dies (as its worker would) after its
  // planned heartbeat: it reports nothing, and the heartbeat timeout retries it.
  struct Dies {};
  try {
    try {
      std::string result;
      if (type == progress_activity.name) {
        const auto [units, dies_after, step] = from_payloads<int, int, int>(task.input(), "the input of 'progress'");
        const ActivityLog::StepKey key{info.workflow_id, step};
        auto heartbeat = [&](const v1::Payloads& details) {
          fiber.sleep(s_.random_duration(std::chrono::milliseconds(300), std::chrono::seconds(1)),
                      "unit of " + task.activity_id());
          const int count = std::get<0>(from_payloads<int>(details, "a heartbeat of 'progress'"));
          int& sent = activity_log_.heartbeat_sent[key];
          sent = std::max(sent, count);
          v1::HeartbeatActivityRequest r;
          r.set_task_token(task.task_token());
          r.set_identity(live.identity);
          *r.mutable_details() = details;
          bool cancel = false;
          try {
            cancel = live.connection.heartbeat_activity(r);
            int& acked = activity_log_.heartbeat_acked[key];
            acked = std::max(acked, count);
          } catch (const RpcError&) {
            // Lost, or refused for an attempt that is over: the next unit heartbeats again.
          }
          if (info.attempt == 1 && count == dies_after) {
            ++activity_log_.heartbeat_attempts_died;
            throw Dies{};
          }
          return cancel;
        };
        ActivityContext context(info, task.heartbeat_details(), heartbeat);
        const int from = context.last_heartbeat<int>().value_or(0);
        const int acked = activity_log_.heartbeat_acked[key], sent = activity_log_.heartbeat_sent[key];
        if (from < acked || from > sent) {
          activity_log_.failures.push_back(info.workflow_id + ": attempt " + std::to_string(info.attempt) +
                                           " of its step " + std::to_string(step) + " resumed from heartbeat " +
                                           std::to_string(from) + ", the model says from " + std::to_string(acked) +
                                           " (the last acknowledged) to " + std::to_string(sent) + " (the last sent)");
        }
        if (from > 0) ++activity_log_.heartbeat_attempts_resumed;
        result = progress(context, units, dies_after, step);
      } else {
        ActivityContext context(info, {}, [](const v1::Payloads&) { return false; });
        if (type == stall_activity.name) {
          const auto [step] = from_payloads<int>(task.input(), "the input of 'stall'");
          result = stall(context, step);
        } else {
          const auto [fail_times] = from_payloads<int>(task.input(), "the input of activity 'flaky'");
          result = flaky(context, fail_times);
        }
      }
      v1::CompleteActivityRequest done;
      done.set_task_token(task.task_token());
      done.set_identity(live.identity);
      *done.mutable_result()->add_payloads() = to_payload(result);
      if (ask_eager_workflow_task(live, info.run_id)) {
        done.set_eager_workflow_task_queue(live.sticky_queue);
        done.set_hold_with_workflow_task(s_.chance(0.5));
      }
      const v1::CompleteActivityResponse answer = live.connection.complete_activity_answered(done);
      if (!answer.result_held()) activity_log_.completions_acked[info.run_id].push_back(result);
      bool task_answered = run_eager_workflow_task(live, answer.workflow_task(), answer.result_held());
      if (answer.result_held()) {
        // As Worker::report_outcome: the task's answer acknowledges the
        // held result; without it, the result is reported again alone.
        if (!task_answered) {
          done.clear_eager_workflow_task_queue();
          done.clear_hold_with_workflow_task();
          try {
            live.connection.complete_activity(done);
            task_answered = true;
            ++activity_log_.held_results_reported_again;
          } catch (const RpcError&) {
            // NOT_FOUND (committed after all, or the attempt is over) or lost.
          }
        }
        if (task_answered) activity_log_.completions_acked[info.run_id].push_back(result);
      }
    } catch (const ApplicationError& e) {
      v1::FailActivityRequest failed;
      failed.set_task_token(task.task_token());
      failed.set_identity(live.identity);
      failed.mutable_failure()->set_message(e.what());
      if (ask_eager_workflow_task(live, info.run_id)) failed.set_eager_workflow_task_queue(live.sticky_queue);
      run_eager_workflow_task(live, live.connection.fail_activity_answered(failed).workflow_task());
    }
  } catch (const RpcError&) {
    // The outcome was lost: the attempt times out and is retried.
  } catch (const Dies&) {
  }
}

// As Worker::report_outcome: only a worker that holds the run in its cache
// asks (the task would come to its sticky queue); half the time, so the
// task also goes through the queue.
bool SimWorker::ask_eager_workflow_task(Incarnation& live, const std::string& run_id) {
  return !live.sticky_queue.empty() && live.cache->holds(run_id) && s_.chance(0.5);
}

// Runs a workflow task the engine handed out in an activity outcome's or
// a start's answer on this fiber, as a poll would have.
bool SimWorker::run_eager_workflow_task(Incarnation& live, const v1::PollWorkflowTaskResponse& task, bool held) {
  if (task.task_token().empty()) return false;
  std::vector<int64_t>& handed = activity_log_.eager_workflow_tasks[task.workflow_execution().run_id()];
  // A task held uncommitted with its activity's result is in history only
  // once its answer got through: a crash before that loses its hand-out.
  if (!held) handed.push_back(task.started_event_id());
  try {
    live.runner->run(task);
    if (held) {
      handed.push_back(task.started_event_id());
      ++activity_log_.held_results_answered;
    }
    return true;
  } catch (const std::exception& e) {
    if (verbose_) std::fprintf(stderr, "%s: %s\n", live.identity.c_str(), e.what());
    return false;
  }
}

v1::Payloads SimWorker::run_local_attempt(ActivityContext& ctx, const v1::Payloads& input) {
  const auto [fail_times, seconds, step] = from_payloads<int, int, int>(input, "the input of the local activity");
  // Counted unless the attempt runs to its end: a worker crash unwinds this fiber.
  struct CutByCrash {
    ActivityLog& log;
    bool ended = false;
    ~CutByCrash() {
      if (!ended) ++log.cut_by_crash;
    }
  } cut{activity_log_};
  ++activity_log_.attempts;
  SimFiber::current()->sleep(std::chrono::seconds(seconds) + s_.random_duration(Duration(0), std::chrono::seconds(1)),
                             "local activity " + ctx.info().workflow_id + "/" + std::to_string(step));
  cut.ended = true;
  std::string result = local_flaky(ctx, fail_times, seconds, step);  // throws while it fails
  ++activity_log_.succeeded[{ctx.info().workflow_id, step}];
  v1::Payloads out;
  *out.add_payloads() = to_payload(result);
  return out;
}

}  // namespace reprise::sim
