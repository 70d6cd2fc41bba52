// The replay check behind reprise::testing::replay (<reprise/testing.hpp>).
// It lives in libreprise, not libreprise-testing: it drives the worker's
// WorkflowInstance, which libreprise does not export.
#pragma once

#include <string>

#include "reprise/detail/workflow_starter.hpp"
#include "reprise/export.hpp"
#include "reprise/v1/history.pb.h"

namespace reprise::testing::detail {

// Replays `history` through a fresh instance of the workflow `starter` runs.
// Throws NonDeterminismError, or reprise::Error when the history cannot be
// replayed as this workflow.
REPRISE_EXPORT void replay_history(const v1::History& history, const std::string& workflow_type,
                                   worker::WorkflowStarter starter);

}  // namespace reprise::testing::detail
