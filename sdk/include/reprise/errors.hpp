// The exceptions workflow and activity code sees. Core code returns Status;
// user-facing code throws where that reads better in a workflow.
#pragma once

#include <stdexcept>
#include <string>

#include "reprise/export.hpp"

namespace reprise {

// Base of every Reprise exception.
class REPRISE_EXPORT Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A value does not decode as the type the code expects.
class REPRISE_EXPORT PayloadError : public Error {
 public:
  using Error::Error;
};

// Thrown by user code to fail an activity or workflow with a typed error;
// `non_retryable` stops activity and workflow retries at once.
class REPRISE_EXPORT ApplicationError : public Error {
 public:
  ApplicationError(std::string type, const std::string& message, bool non_retryable = false)
      : Error(message), type_(std::move(type)), non_retryable_(non_retryable) {}
  const std::string& type() const { return type_; }
  bool non_retryable() const { return non_retryable_; }

 private:
  std::string type_;
  bool non_retryable_;
};

// An activity the workflow awaited failed, timed out or was canceled after
// its retries; `what()` carries the cause's message.
class REPRISE_EXPORT ActivityError : public Error {
 public:
  ActivityError(std::string activity, const std::string& message, std::string cause_type)
      : Error("activity '" + activity + "' failed: " + message),
        activity_(std::move(activity)),
        cause_type_(std::move(cause_type)) {}
  const std::string& activity() const { return activity_; }
  const std::string& cause_type() const { return cause_type_; }

 private:
  std::string activity_;
  std::string cause_type_;
};

// The work was canceled: the workflow was asked to cancel (awaiting any
// cancellable future then throws this), or the code canceled the future it
// awaits. Let it escape the workflow to end it as canceled; catch it to
// clean up first (through ctx.non_cancellable()).
class REPRISE_EXPORT CanceledError : public Error {
 public:
  using Error::Error;
};

// A child workflow the workflow awaited did not complete: it failed, timed
// out, was canceled or terminated, or could not start (its id was in use).
class REPRISE_EXPORT ChildWorkflowError : public Error {
 public:
  ChildWorkflowError(std::string workflow_id, const std::string& message, std::string cause_type)
      : Error("child workflow '" + workflow_id + "' " + message),
        workflow_id_(std::move(workflow_id)),
        cause_type_(std::move(cause_type)) {}
  const std::string& workflow_id() const { return workflow_id_; }
  const std::string& cause_type() const { return cause_type_; }

 private:
  std::string workflow_id_;
  std::string cause_type_;
};

// A signal or cancel request this workflow sent to another workflow was not
// delivered: cause() is "NOT_FOUND" (no such workflow, or it is closed) or
// "NOT_CHILD" (child_workflow_only, and the target is not this run's child).
class REPRISE_EXPORT ExternalWorkflowError : public Error {
 public:
  ExternalWorkflowError(std::string workflow_id, const std::string& message, std::string cause)
      : Error(message), workflow_id_(std::move(workflow_id)), cause_(std::move(cause)) {}
  const std::string& workflow_id() const { return workflow_id_; }
  const std::string& cause() const { return cause_; }

 private:
  std::string workflow_id_;
  std::string cause_;
};

// The workflow's code did something its recorded history did not (or the
// reverse): replaying it would not reproduce the execution.
class REPRISE_EXPORT NonDeterminismError : public Error {
 public:
  using Error::Error;
};

}  // namespace reprise
