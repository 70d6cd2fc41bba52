// Chains of runs: a run that closes by continue-as-new, or fails or times
// out into a retry, names the run that carries its workflow on. One home for
// reading that, for the engine's result waits and the client's.
#pragma once

#include <string>

#include "reprise/v1/history.pb.h"

namespace reprise::history {

// The run a close event hands its chain on to (continue-as-new, a retry of a
// failed or timed-out run), or empty when the chain ends there.
inline std::string next_run_named_by(const v1::HistoryEvent& close) {
  switch (close.attributes_case()) {
    case v1::HistoryEvent::kWorkflowExecutionContinuedAsNew:
      return close.workflow_execution_continued_as_new().new_execution_run_id();
    case v1::HistoryEvent::kWorkflowExecutionFailed:
      return close.workflow_execution_failed().new_execution_run_id();
    case v1::HistoryEvent::kWorkflowExecutionTimedOut:
      return close.workflow_execution_timed_out().new_execution_run_id();
    default:
      return "";
  }
}

}  // namespace reprise::history
