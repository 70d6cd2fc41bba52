// How workflow code asks for work to run: ActivityOptions (no default: an
// activity needs a timeout), LocalActivityOptions and ChildWorkflowOptions.
// Unrelated types, so one cannot be passed where another belongs. ExternalWorkflow names the
// target of a signal or cancel request to another workflow. RetryPolicy is
// shared by activities, child workflows and StartOptions.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "reprise/detail/proto_time.hpp"
#include "reprise/v1/command.pb.h"

namespace reprise {

// When a failed activity attempt, or a failed or timed-out workflow run, is
// tried again (Temporal's RetryPolicy). Zero fields take the server's
// defaults: 1 s initial interval, coefficient 2, at most 100 × the initial
// interval, unlimited attempts. A failure whose type is listed, or that is
// marked non-retryable, is not retried.
struct RetryPolicy {
  std::chrono::nanoseconds initial_interval{0};
  double backoff_coefficient = 0;
  std::chrono::nanoseconds maximum_interval{0};
  int maximum_attempts = 0;  // 0: unlimited; 1: no retry
  std::vector<std::string> non_retryable_error_types{};

  v1::RetryPolicy to_proto() const {
    v1::RetryPolicy p;
    if (initial_interval.count() > 0) set_duration(p.mutable_initial_interval(), initial_interval);
    p.set_backoff_coefficient(backoff_coefficient);
    if (maximum_interval.count() > 0) set_duration(p.mutable_maximum_interval(), maximum_interval);
    p.set_maximum_attempts(maximum_attempts);
    for (const std::string& type : non_retryable_error_types) p.add_non_retryable_error_types(type);
    return p;
  }
};

// How an activity runs. There is no default: every activity needs a bound on
// how long it may take, so options start from one of the two timeouts.
class ActivityOptions {
 public:
  static ActivityOptions start_to_close(std::chrono::nanoseconds timeout) {
    ActivityOptions o;
    o.start_to_close_ = timeout;
    return o;
  }
  static ActivityOptions schedule_to_close(std::chrono::nanoseconds timeout) {
    ActivityOptions o;
    o.schedule_to_close_ = timeout;
    return o;
  }
  ActivityOptions& heartbeat(std::chrono::nanoseconds timeout) {
    heartbeat_ = timeout;
    return *this;
  }
  ActivityOptions& schedule_to_start(std::chrono::nanoseconds timeout) {
    schedule_to_start_ = timeout;
    return *this;
  }
  ActivityOptions& task_queue(std::string queue) {
    task_queue_ = std::move(queue);
    return *this;
  }
  ActivityOptions& maximum_attempts(int attempts) {
    retry_.set_maximum_attempts(attempts);
    return *this;
  }
  ActivityOptions& retry_initial_interval(std::chrono::nanoseconds interval) {
    set_duration(retry_.mutable_initial_interval(), interval);
    return *this;
  }
  ActivityOptions& non_retryable(std::string error_type) {
    retry_.add_non_retryable_error_types(std::move(error_type));
    return *this;
  }
  // The whole policy at once, replacing what the three above set.
  ActivityOptions& retry(const RetryPolicy& policy) {
    retry_ = policy.to_proto();
    return *this;
  }

  void apply(v1::ScheduleActivityTaskCommandAttributes& a) const {
    if (start_to_close_.count() > 0) set_duration(a.mutable_start_to_close_timeout(), start_to_close_);
    if (schedule_to_close_.count() > 0) set_duration(a.mutable_schedule_to_close_timeout(), schedule_to_close_);
    if (schedule_to_start_.count() > 0) set_duration(a.mutable_schedule_to_start_timeout(), schedule_to_start_);
    if (heartbeat_.count() > 0) set_duration(a.mutable_heartbeat_timeout(), heartbeat_);
    if (!task_queue_.empty()) a.mutable_task_queue()->set_name(task_queue_);
    *a.mutable_retry_policy() = retry_;
  }

 private:
  ActivityOptions() = default;
  std::chrono::nanoseconds start_to_close_{0}, schedule_to_close_{0}, schedule_to_start_{0}, heartbeat_{0};
  std::string task_queue_;
  v1::RetryPolicy retry_;
};

// How a local activity runs (ctx.execute_local): by the worker itself,
// inside the workflow task, retried there with backoff. Like ActivityOptions
// there is no default: options start from one of the two timeouts.
// start_to_close bounds each attempt (one that takes longer counts as timed
// out and is retried; the function itself is not interrupted);
// schedule_to_close bounds all attempts together.
class LocalActivityOptions {
 public:
  static LocalActivityOptions start_to_close(std::chrono::nanoseconds timeout) {
    LocalActivityOptions o;
    o.start_to_close_ = timeout;
    return o;
  }
  static LocalActivityOptions schedule_to_close(std::chrono::nanoseconds timeout) {
    LocalActivityOptions o;
    o.schedule_to_close_ = timeout;
    return o;
  }
  LocalActivityOptions& maximum_attempts(int attempts) {
    retry_.set_maximum_attempts(attempts);
    return *this;
  }
  LocalActivityOptions& retry_initial_interval(std::chrono::nanoseconds interval) {
    set_duration(retry_.mutable_initial_interval(), interval);
    return *this;
  }
  LocalActivityOptions& non_retryable(std::string error_type) {
    retry_.add_non_retryable_error_types(std::move(error_type));
    return *this;
  }
  // The whole policy at once, replacing what the three above set.
  LocalActivityOptions& retry(const RetryPolicy& policy) {
    retry_ = policy.to_proto();
    return *this;
  }

  // The request the worker runs: the same attributes a scheduled activity has.
  void apply(v1::ScheduleActivityTaskCommandAttributes& a) const {
    if (start_to_close_.count() > 0) set_duration(a.mutable_start_to_close_timeout(), start_to_close_);
    if (schedule_to_close_.count() > 0) set_duration(a.mutable_schedule_to_close_timeout(), schedule_to_close_);
    *a.mutable_retry_policy() = retry_;
  }

 private:
  LocalActivityOptions() = default;
  std::chrono::nanoseconds start_to_close_{0}, schedule_to_close_{0};
  v1::RetryPolicy retry_;
};

// How a child workflow runs. Every field has a default: the id is derived
// from the parent's (unique and the same on replay), the task queue is the
// parent's, and the child is terminated when the parent closes.
class ChildWorkflowOptions {
 public:
  enum class ParentClose { kTerminate, kRequestCancel, kAbandon };

  ChildWorkflowOptions& id(std::string workflow_id) {
    id_ = std::move(workflow_id);
    return *this;
  }
  ChildWorkflowOptions& task_queue(std::string queue) {
    task_queue_ = std::move(queue);
    return *this;
  }
  ChildWorkflowOptions& execution_timeout(std::chrono::nanoseconds timeout) {
    execution_timeout_ = timeout;
    return *this;
  }
  ChildWorkflowOptions& run_timeout(std::chrono::nanoseconds timeout) {
    run_timeout_ = timeout;
    return *this;
  }
  // What happens to the child when the parent closes first.
  ChildWorkflowOptions& parent_close(ParentClose policy) {
    parent_close_ = policy;
    return *this;
  }
  // A failed or timed-out run of the child is retried as a new run of its
  // id; the parent sees only how the last run closed.
  ChildWorkflowOptions& retry(const RetryPolicy& policy) {
    retry_ = policy.to_proto();
    return *this;
  }

  const std::string& workflow_id() const { return id_; }
  void apply(v1::StartChildWorkflowExecutionCommandAttributes& a) const {
    a.set_workflow_id(id_);
    if (!task_queue_.empty()) a.mutable_task_queue()->set_name(task_queue_);
    if (execution_timeout_.count() > 0) set_duration(a.mutable_workflow_execution_timeout(), execution_timeout_);
    if (run_timeout_.count() > 0) set_duration(a.mutable_workflow_run_timeout(), run_timeout_);
    if (retry_) *a.mutable_retry_policy() = *retry_;
    switch (parent_close_) {
      case ParentClose::kTerminate:
        a.set_parent_close_policy(v1::PARENT_CLOSE_POLICY_TERMINATE);
        break;
      case ParentClose::kRequestCancel:
        a.set_parent_close_policy(v1::PARENT_CLOSE_POLICY_REQUEST_CANCEL);
        break;
      case ParentClose::kAbandon:
        a.set_parent_close_policy(v1::PARENT_CLOSE_POLICY_ABANDON);
        break;
    }
  }

 private:
  std::string id_, task_queue_;
  std::chrono::nanoseconds execution_timeout_{0}, run_timeout_{0};
  std::optional<v1::RetryPolicy> retry_;
  ParentClose parent_close_ = ParentClose::kTerminate;
};

// The workflow ctx.signal_external / ctx.cancel_external sends to: a
// workflow id (its current run, following continue-as-new), or an id and a
// run id; child_workflow_only() has the server deliver only to a child of
// this run (NOT_CHILD otherwise).
//   ctx.signal_external("order-7", amend, change);
//   ctx.cancel_external(reprise::ExternalWorkflow(child.workflow_id()).child_workflow_only());
// A class with constructors, not an aggregate: g++ 12 destroys an aggregate
// temporary twice when it is built inside a co_await expression.
class ExternalWorkflow {
 public:
  // Implicit, so a workflow id will do where an ExternalWorkflow is expected.
  ExternalWorkflow(std::string workflow_id, std::string run_id = "")
      : workflow_id_(std::move(workflow_id)), run_id_(std::move(run_id)) {}
  ExternalWorkflow(const char* workflow_id) : ExternalWorkflow(std::string(workflow_id)) {}
  ExternalWorkflow& child_workflow_only(bool only = true) {
    child_workflow_only_ = only;
    return *this;
  }

  const std::string& workflow_id() const { return workflow_id_; }
  const std::string& run_id() const { return run_id_; }
  // Signal or cancel-request command attributes.
  template <typename Attributes>
  void apply(Attributes& a) const {
    a.mutable_execution()->set_workflow_id(workflow_id_);
    a.mutable_execution()->set_run_id(run_id_);
    a.set_child_workflow_only(child_workflow_only_);
  }

 private:
  std::string workflow_id_, run_id_;
  bool child_workflow_only_ = false;
};

}  // namespace reprise
