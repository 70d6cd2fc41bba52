// ApplyResult: what WorkflowInstance::apply() gives — the activation, or why
// there is none. Non-determinism (the code and its recorded history
// disagree) is its own kind, so the worker reports exactly that as
// non-determinism and nothing else: not a history that does not continue the
// instance, not a bug in the workflow's code, not some other failed
// precondition on the way.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "history/status.hpp"
#include "reprise/v1/command.pb.h"

namespace reprise::worker {

// What a workflow task's activation decided: the commands to send.
struct Activation {
  std::vector<v1::Command> commands;
};

// The workflow's code did something its history did not record, or the reverse.
struct NonDeterminism {
  std::string message;
};

class [[nodiscard]] ApplyResult {
 public:
  ApplyResult(Activation activation) : activation_(std::move(activation)) {}
  ApplyResult(NonDeterminism n) : error_(Status::failed_precondition(std::move(n.message))), nondeterminism_(true) {}
  // Any other error; constructing from an OK Status is a bug.
  ApplyResult(Status error) : error_(std::move(error)) { assert(!error_.is_ok()); }

  bool is_ok() const { return activation_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  bool nondeterministic() const { return nondeterminism_; }
  // The error (OK when there is none); a non-determinism reads as
  // FAILED_PRECONDITION with its message.
  const Status& status() const { return error_; }

  Activation& value() { return *activation_; }
  const Activation& value() const { return *activation_; }
  Activation* operator->() { return &*activation_; }
  const Activation* operator->() const { return &*activation_; }
  Activation& operator*() { return *activation_; }

 private:
  std::optional<Activation> activation_;
  Status error_;
  bool nondeterminism_ = false;
};

}  // namespace reprise::worker
