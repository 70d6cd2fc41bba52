// Whether a workflow id may start a new run after `previous` closed, under
// the start's reuse policy. StartWorkflow and child workflows both ask.
#pragma once

#include "reprise/v1/common.pb.h"

namespace reprise::engine {

inline bool workflow_id_reusable(v1::WorkflowIdReusePolicy policy, v1::WorkflowExecutionStatus previous) {
  switch (policy) {
    case v1::WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE:
      return false;
    case v1::WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY:
      return previous == v1::WORKFLOW_EXECUTION_STATUS_FAILED || previous == v1::WORKFLOW_EXECUTION_STATUS_CANCELED ||
             previous == v1::WORKFLOW_EXECUTION_STATUS_TERMINATED ||
             previous == v1::WORKFLOW_EXECUTION_STATUS_TIMED_OUT;
    default:
      return true;
  }
}

}  // namespace reprise::engine
