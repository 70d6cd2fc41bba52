// How an exception from user code becomes a v1::Failure: the message, and
// the type and retryability an ApplicationError (or a failed activity) carries.
#pragma once

#include <exception>

#include "reprise/errors.hpp"
#include "reprise/v1/common.pb.h"

namespace reprise::detail {

inline v1::Failure failure_of(const std::exception& e) {
  v1::Failure f;
  f.set_message(e.what());
  f.set_source("cpp-sdk");
  f.set_kind(v1::FAILURE_KIND_APPLICATION);
  if (const auto* app = dynamic_cast<const ApplicationError*>(&e)) {
    f.set_type(app->type());
    f.set_non_retryable(app->non_retryable());
  } else if (const auto* activity = dynamic_cast<const ActivityError*>(&e)) {
    f.set_kind(v1::FAILURE_KIND_ACTIVITY);
    f.set_type(activity->cause_type());
  } else if (const auto* child = dynamic_cast<const ChildWorkflowError*>(&e)) {
    f.set_kind(v1::FAILURE_KIND_CHILD_WORKFLOW);
    f.set_type(child->cause_type());
  } else if (const auto* external = dynamic_cast<const ExternalWorkflowError*>(&e)) {
    f.set_type(external->cause());
  } else if (dynamic_cast<const CanceledError*>(&e)) {
    f.set_kind(v1::FAILURE_KIND_CANCELED);
  }
  return f;
}

}  // namespace reprise::detail
